"""The 2026-07-28 headers a client's request mirrors from its body (the gateway's to an upstream, the stdio server's to
its app): `Mcp-Method`, `Mcp-Name` and, for a tool whose input schema marks parameters with `x-mcp-header`,
`Mcp-Param-*`.

Every mirrored value goes through the spec's encoding (core/transport/headers.py): a name, URI or argument that is
not plain visible ASCII travels Base64-encoded in the sentinel form `=?base64?...?=`, so nothing a caller sends
(a resource URI with CR LF in it, say) can end a header line and start another. A parameter is mirrored when the
schema reaches it through `properties` keys alone and its header name is an HTTP token; its value when it is a
string, an integer or a boolean (the types the spec allows), absent or null otherwise.
"""

from __future__ import annotations

import re
from typing import Any

from stratus.protocol.header_values import encode_header_value
from stratus.types import JsonObject

ParameterHeaders = dict[tuple[str, ...], str]
"""A tool's mirrored parameters: the chain of `properties` keys reaching each one -> its header's name part."""
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
MAX_DEPTH = 16
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def parameter_headers(definition: JsonObject) -> ParameterHeaders:
    """The parameters a tool definition marks with `x-mcp-header` (those with a name that is no token are left
    out: the upstream's definition is invalid there, and its header could not be written)."""
    found: ParameterHeaders = {}
    _walk(definition.get("inputSchema"), (), found)
    return found


def _walk(schema: Any, path: tuple[str, ...], found: ParameterHeaders) -> None:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or len(path) >= MAX_DEPTH:
        return
    for name, spec in properties.items():
        if not isinstance(spec, dict):
            continue
        header = spec.get("x-mcp-header")
        if isinstance(header, str) and _TOKEN.fullmatch(header):
            found[(*path, str(name))] = header
        _walk(spec, (*path, str(name)), found)


def mirrored_headers(message: JsonObject, tools: dict[str, ParameterHeaders]) -> dict[str, str]:
    """`Mcp-Method`, and `Mcp-Name` and `Mcp-Param-*` where they apply, for a request (none for a reply);
    `tools` holds the mirrored parameters of the upstream's tools, by tool name."""
    method = message.get("method")
    if not isinstance(method, str):
        return {}
    sent = message.get("params")
    params: JsonObject = sent if isinstance(sent, dict) else {}
    headers = {"mcp-method": method}
    named = params.get(NAMED.get(method, ""))
    if isinstance(named, str):
        headers["mcp-name"] = encode_header_value(named)
    if method == "tools/call" and isinstance(named, str):
        for path, header in tools.get(named, {}).items():
            value = _text(_at(params.get("arguments"), path))
            if value is not None:
                headers[f"mcp-param-{header.lower()}"] = encode_header_value(value)
    return headers


def _at(arguments: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(arguments, dict):
            return None
        arguments = arguments.get(key)
    return arguments


def _text(value: Any) -> str | None:
    """A parameter's value as its header carries it: strings as they are, integers in decimal, booleans as
    `true` / `false`; None for anything the spec does not mirror."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # an integer parameter a client sent as 42.0
    return value if isinstance(value, str) else None
