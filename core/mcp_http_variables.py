"""The session REST API's `MCP_HTTP_*` variables, the names its users already configure, read as Stratus settings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stratus.setting_values import count, csv, positive_int

SEED_PREFIX = "MCP_HTTP_"


def session_api_settings(environ: Mapping[str, str], problems: list[str]) -> dict[str, Any]:
    """The session REST API's `MCP_HTTP_*` variables (the names its users already configure) as settings (a
    `STRATUS_*` variable of the same setting wins); a value that does not parse is added to `problems`, naming its
    variable, and the others are still read.

    `MCP_HTTP_SESSION_TIMEOUT` is in milliseconds; `MCP_HTTP_ENABLE_DNS_REBINDING_PROTECTION=false` accepts any
    Host (the protection stays on unless it is explicitly turned off). `MCP_HTTP_PORT` is read by `stratus serve`.
    """
    values: dict[str, Any] = {}
    readers: tuple[tuple[str, str, Callable[[str], Any]], ...] = (
        ("ALLOWED_HOSTS", "allowed_hosts", csv),
        ("ALLOWED_ORIGINS", "allowed_origins", csv),
        ("MAX_SESSIONS", "max_sessions", count),
        ("SESSION_TIMEOUT", "session_ttl_seconds", lambda text: max(1, -(-positive_int(text) // 1000))),
    )
    for suffix, name, read in readers:
        if raw := environ.get(f"{SEED_PREFIX}{suffix}"):
            try:
                values[name] = read(raw)
            except ValueError as exc:
                unit = " (milliseconds)" if suffix == "SESSION_TIMEOUT" else ""
                problems.append(f"{SEED_PREFIX}{suffix}={raw!r}: {exc}{unit}")
    if environ.get(f"{SEED_PREFIX}ENABLE_DNS_REBINDING_PROTECTION", "").strip().lower() == "false":
        values["allowed_hosts"] = ("*",)
    return values
