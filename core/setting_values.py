"""How a setting's text becomes its value; each raises ValueError saying what is accepted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def csv(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def positive_int(value: str) -> int:
    if not value.strip().isdigit() or int(value) <= 0:
        raise ValueError("must be a positive integer")
    return int(value)


def flag(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("must be true or false")
    return lowered == "true"


def positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not 0 < number < float("inf"):
        raise ValueError("must be a positive number of seconds, e.g. 2.5")
    return number


def seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0 <= number < float("inf"):
        raise ValueError("must be 0 or a positive number of seconds, e.g. 2.5")
    return number


def count(value: str) -> int:
    if not value.strip().isdigit():
        raise ValueError("must be 0 or a positive integer")
    return int(value)


_HEX = frozenset("0123456789abcdefABCDEF")
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
MIN_SECRET_BYTES = 32
_MIN_DISTINCT_BYTES = 16
"""32 random bytes hold about 30 distinct values (fewer than 16 by chance: under 1 in 10^15); a repeated word or
pattern dressed as hex or base64 holds a handful."""


def strong_secret(value: str) -> bool:
    """Whether `value` is at least 32 random-looking bytes written as hex (64 characters or more) or base64 /
    base64url (43 or more), as `openssl rand -hex 32` or `-base64 32` writes them; a password or a phrase is not."""
    import binascii

    if len(value) >= 2 * MIN_SECRET_BYTES and len(value) % 2 == 0 and set(value) <= _HEX:
        raw = bytes.fromhex(value)
    elif len(value.rstrip("=")) >= 43 and set(value.rstrip("=")) <= _BASE64:
        text = value.rstrip("=").translate(str.maketrans("-_", "+/"))
        try:
            raw = binascii.a2b_base64(text + "=" * (-len(text) % 4), strict_mode=True)
        except binascii.Error:
            return False
    else:
        return False
    return len(raw) >= MIN_SECRET_BYTES and len(set(raw)) >= _MIN_DISTINCT_BYTES


PARSERS: dict[str, Callable[[str], Any]] = {  # by Settings field; a field not named takes its text as it is
    "allowed_hosts": csv,
    "allowed_origins": csv,
    "metrics_tools": csv,
    "auth_scopes": csv,
    "auth_upstream_scopes": csv,
    "auth_token_seconds": positive_int,
    "auth_refresh_seconds": positive_int,
    "auth_registration_seconds": positive_int,
    "auth_registrations_per_hour": positive_int,
    "gateway_allowed_networks": csv,
    "trust_request_context_header": flag,
    "eager_invocations": flag,
    "max_body_bytes": positive_int,
    "max_response_bytes": count,
    "max_record_bytes": count,
    "body_timeout_seconds": positive_float,
    "serve_header_timeout_seconds": positive_float,
    "serve_max_connections": count,
    "max_batch_length": positive_int,
    "max_batch_response_bytes": positive_int,
    "max_streams": positive_int,
    "max_streams_per_session": count,
    "max_streams_per_principal": count,
    "max_tasks": positive_int,
    "max_tasks_per_principal": count,
    "anonymous_task_ttl_seconds": count,
    "session_ttl_seconds": positive_int,
    "max_sessions": count,
    "max_sessions_per_principal": count,
    "store_timeout_seconds": positive_float,
    "max_stream_seconds": positive_float,
    "keepalive_seconds": positive_float,
    "poll_hold_seconds": seconds,
    "lambda_host": flag,
    "poll_retry_seconds": positive_float,
}
