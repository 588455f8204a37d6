"""Upstream MCP servers a gateway fronts, read from the `{"mcpServers": {NAME: {...}}}` document hosts use.

    {"mcpServers": {
        "github":  {"url": "https://api.example.com/mcp", "headers": {"Authorization": "ssm:/gw/github-token"}},
        "legacy":  {"type": "sse", "url": "https://old.example.com/sse"},
        "files":   {"command": "python", "args": ["-m", "files_server"], "env": {"ROOT": "/data"}},
        "local":   {"url": "http://127.0.0.1:9000/mcp", "namespaced": false, "isActive": false}
    }}

`type` (or `transport`) is `http` (Streamable HTTP, either protocol era), `sse` (the HTTP+SSE (2024-11-05) transport),
`websocket` (`ws`: MCP over WebSocket, subprotocol `mcp`; needs the `stratus-mcp[websocket]` extra) or `stdio`;
without one, `command` means stdio, a `ws://` or `wss://` url means websocket and any other url means http. Header
and env values may name a secret (`ssm:NAME`, `secretsmanager:ID`, `env:NAME`) resolved when the upstream is
connected, never stored resolved.
Every problem in a document is reported at once, each naming its server and field.

The client connection pool's record fields are kept as given: `id` (`mcp_{timestamp}_{random}`, given by the
registry when absent), `isTrusted` (default false), `installSource` (`builtin`, `manual` (default), `protocol` or
`unknown`), `projectPath` (the project of a `local`-scoped upstream), `createdAt` and `updatedAt`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from stratus.protocol import versions

TRANSPORTS = ("http", "sse", "stdio", "websocket")
SCOPES = ("user", "local")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$")
_KNOWN = {
    "type",
    "transport",
    "url",
    "headers",
    "command",
    "args",
    "env",
    "isActive",
    "disabledTools",
    "disabledAutoApproveTools",
    "scope",
    "namespaced",
    "protocolVersion",
    "concurrentCalls",
    "description",
    "id",
    "isTrusted",
    "installSource",
    "projectPath",
    "createdAt",
    "updatedAt",
}
INSTALL_SOURCES = ("builtin", "manual", "protocol", "unknown")


class GatewayConfigError(ValueError):
    """The document has problems; `problems` lists each one, naming its server and field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True, kw_only=True)
class Upstream:
    """One upstream MCP server and how the gateway exposes it."""

    name: str
    transport: str
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    active: bool = True
    disabled_tools: frozenset[str] = frozenset()
    no_auto_approve_tools: frozenset[str] = frozenset()
    scope: str = "user"
    namespaced: bool = True
    """Expose its tools as `mcp__{server}__{tool}`; off, under their own names (one upstream, or no clashes)."""
    protocol_version: str | None = None
    """Pin the upstream's protocol revision; by default the gateway asks `server/discover` and falls back to the
    `initialize` handshake."""
    concurrent_calls: bool = False
    """On a wire whose messages share one stream (stdio, WebSocket, HTTP+SSE), let calls overlap on the connection.
    By default they take turns, so a log line or a question that names no request reaches the one caller it can be
    about; overlapping, such a message is dropped whenever several calls wait (stratus.gateway.demux)."""
    # What the record says about the upstream, not how to reach it: a change reconnects nothing.
    id: str | None = field(default=None, compare=False)
    """The record's identity (`mcp_{timestamp}_{random}`), given when it is recorded and never changed."""
    trusted: bool = field(default=False, compare=False)
    install_source: str = field(default="manual", compare=False)
    project_path: str | None = field(default=None, compare=False)
    """The project a `local`-scoped upstream belongs to."""

    @property
    def prefix(self) -> str:
        """The namespace of its tools: `mcp__{name}__` with every non-alphanumeric character as `_`."""
        return f"mcp__{clean(self.name)}__"


def clean(name: str) -> str:
    """A name as a tool-id part: every character other than ASCII letters and digits becomes `_`."""
    return re.sub(r"[^A-Za-z0-9]", "_", name)


def parse_document(text: str) -> list[Upstream]:
    """The upstreams of a JSON document.

    Raises:
        GatewayConfigError: the text is not JSON, or the document has problems (all of them listed).
    """
    repeated: list[str] = []

    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        repeated.extend(key for index, key in enumerate(keys) if key in keys[:index])
        return dict(pairs)

    try:
        document = json.loads(text, object_pairs_hook=no_repeats)
    except (ValueError, RecursionError):
        raise GatewayConfigError(["the gateway configuration is not valid JSON"]) from None
    if repeated:
        raise GatewayConfigError([f"{key}: defined more than once" for key in dict.fromkeys(repeated)])
    return parse_servers(document)


def parse_servers(document: Any) -> list[Upstream]:
    """The upstreams of a parsed `{"mcpServers": {...}}` document (or of its `mcpServers` object alone)."""
    servers = document.get("mcpServers", document) if isinstance(document, dict) else None
    if not isinstance(servers, dict):
        raise GatewayConfigError(['expected {"mcpServers": {NAME: {...}}}'])
    problems: list[str] = []
    upstreams = [upstream for name, entry in servers.items() if (upstream := _upstream(name, entry, problems))]
    problems.extend(namespace_collisions(upstreams))
    if problems:
        raise GatewayConfigError(problems)
    return upstreams


def namespace_collisions(upstreams: list[Upstream]) -> list[str]:
    """Servers whose tool namespaces overlap, one problem each: the same namespace (`a.b`, `a_b`), or one inside the
    other's (`a` holds `mcp__a__b__c`, which is also `a__b`'s tool `c`), so one server's tool could take another's
    name. Compared without case, as hosts may."""
    found: list[str] = []
    for index, upstream in enumerate(upstreams):
        for other in upstreams[:index]:
            mine, theirs = upstream.prefix.lower(), other.prefix.lower()
            if mine == theirs:
                found.append(
                    f"{upstream.name}: the same tool namespace as {other.name} (names differ only in punctuation)"
                )
            elif mine.startswith(theirs) or theirs.startswith(mine):
                outer, inner = (other, upstream) if mine.startswith(theirs) else (upstream, other)
                found.append(
                    f"{upstream.name}: its tool namespace {upstream.prefix} and {other.name}'s {other.prefix} overlap"
                    f" ({outer.name}'s tools can be named like {inner.name}'s); rename one"
                )
    return found


def _upstream(name: str, entry: Any, problems: list[str]) -> Upstream | None:
    found: list[str] = []
    if not _NAME.match(name):
        found.append(f"{name!r}: a name is 1-64 letters, digits, spaces, '.', '_' or '-', starting alphanumeric")
    if not isinstance(entry, dict):
        problems.extend([*found, f"{name}: expected an object"])
        return None
    found += [f"{name}.{key}: unknown field" for key in sorted(set(entry) - _KNOWN)]
    transport = entry.get("type", entry.get("transport"))
    if transport is None:
        scheme = urlsplit(entry["url"]).scheme if isinstance(entry.get("url"), str) else ""
        transport = "stdio" if "command" in entry else "websocket" if scheme in ("ws", "wss") else "http"
    transport = {"streamable-http": "http", "ws": "websocket"}.get(transport, transport)
    if transport not in TRANSPORTS:
        found.append(f"{name}.type: expected one of {', '.join(TRANSPORTS)}, got {transport!r}")
    url, command = entry.get("url"), entry.get("command")
    if transport == "stdio":
        if not isinstance(command, str) or not command:
            found.append(f"{name}.command: a stdio server needs a command")
        if url is not None:
            found.append(f"{name}.url: a stdio server has no url")
    elif transport in ("http", "sse", "websocket"):
        schemes = ("ws", "wss") if transport == "websocket" else ("http", "https")
        if not isinstance(url, str) or urlsplit(url).scheme not in schemes or not urlsplit(url).hostname:
            found.append(
                f"{name}.url: expected {'a ws(s)' if transport == 'websocket' else 'an http(s)'} URL with a host"
            )
        if command is not None:
            found.append(
                f"{name}.command: {'a' if transport == 'websocket' else 'an'} {transport} server has no command"
            )
    args = _strings(entry.get("args", []), f"{name}.args", found)
    headers = _string_map(entry.get("headers", {}), f"{name}.headers", found)
    env = _string_map(entry.get("env", {}), f"{name}.env", found)
    disabled = _strings(entry.get("disabledTools", []), f"{name}.disabledTools", found)
    no_auto = _strings(entry.get("disabledAutoApproveTools", []), f"{name}.disabledAutoApproveTools", found)
    scope = entry.get("scope", "user")
    if scope not in SCOPES:
        found.append(f"{name}.scope: expected user or local")
    pinned = entry.get("protocolVersion")
    if pinned is not None and pinned not in versions.SUPPORTED_VERSIONS:
        found.append(f"{name}.protocolVersion: expected one of {', '.join(versions.SUPPORTED_VERSIONS)}")
    if pinned is not None and transport in ("stdio", "websocket") and pinned in versions.STATELESS_VERSIONS:
        found.append(f"{name}.protocolVersion: a {transport} server speaks a handshake-era revision")
    record_id, project = entry.get("id"), entry.get("projectPath")
    if record_id is not None and (not isinstance(record_id, str) or not record_id):
        found.append(f"{name}.id: expected a non-empty string")
    if project is not None and not isinstance(project, str):
        found.append(f"{name}.projectPath: expected a string")
    source = entry.get("installSource", "manual")
    if source not in INSTALL_SOURCES:
        found.append(f"{name}.installSource: expected one of {', '.join(INSTALL_SOURCES)}")
    found += [
        f"{name}.{key}: expected a number (milliseconds since the epoch)"
        for key in ("createdAt", "updatedAt")
        if key in entry and (isinstance(entry[key], bool) or not isinstance(entry[key], int | float))
    ]
    flags = {key: entry.get(key, True) for key in ("isActive", "namespaced")}
    flags["isTrusted"] = entry.get("isTrusted", False)
    flags["concurrentCalls"] = entry.get("concurrentCalls", False)
    found += [f"{name}.{key}: expected true or false" for key, value in flags.items() if not isinstance(value, bool)]
    problems.extend(found)
    if found:
        return None
    return Upstream(
        name=name,
        transport=transport,
        url=url,
        headers=headers,
        command=command,
        args=tuple(args),
        env=env,
        active=flags["isActive"],
        disabled_tools=frozenset(disabled),
        no_auto_approve_tools=frozenset(no_auto),
        scope=scope,
        namespaced=flags["namespaced"],
        protocol_version=pinned,
        concurrent_calls=flags["concurrentCalls"],
        id=record_id,
        trusted=flags["isTrusted"],
        install_source=source,
        project_path=project,
    )


def _strings(value: Any, where: str, problems: list[str]) -> list[str]:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    problems.append(f"{where}: expected a list of strings")
    return []


def _string_map(value: Any, where: str, problems: list[str]) -> dict[str, str]:
    if isinstance(value, dict) and all(isinstance(item, str) for item in value.values()):
        return dict(value)
    problems.append(f"{where}: expected an object of strings")
    return {}
