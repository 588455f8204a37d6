"""The 2026-07-28 request-metadata headers: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`.

Each must agree with the body it mirrors, so an intermediary routing on headers and the server executing the body
never disagree. Any missing, malformed or mismatched value is a 400 with JSON-RPC error -32020.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from stratus.errors import HeaderMismatchError
from stratus.protocol import versions
from stratus.protocol.header_values import decode_header_value
from stratus.server.tools import Tool
from stratus.transport.asgi import Headers

NAMED_METHODS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_DECIMAL_NUMBER = r"(-?[0-9]+)(?:\.([0-9]+))?(?:[eE]([-+]?[0-9]+))?"
"""Patterns stay strings until first used (`re` compiles and caches them then): compiling costs a cold start."""
_MAX_SCALE = 5000
"""Decimal exponents beyond this name no integer a JSON body can carry (Python parses at most 4,300 digits)."""
_MAX_DIGITS = 4300
"""Significant digits beyond this name no integer a JSON body can carry (and int() refuses them, its default
`sys.get_int_max_str_digits()`)."""


def _require(headers: Headers, name: str, expected: str) -> None:
    raw = headers.get(name)
    if raw is None:
        raise HeaderMismatchError(f"Header mismatch: required header {name} is missing")
    if decode_header_value(name, raw) != expected:
        raise HeaderMismatchError(f"Header mismatch: {name} does not match the request body")


def _same_value(header: str, body: Any) -> bool:
    if isinstance(body, bool):
        return header == ("true" if body else "false")
    if isinstance(body, int | float):
        # Numerically, as the spec asks (`42.0` is 42), and an integer exactly: as floats, 2**53 + 1 is 2**53.
        number = re.fullmatch(_DECIMAL_NUMBER, header)
        if number is None:
            return False
        if isinstance(body, float):  # already a float in the body: compared at the precision the tool gets
            return float(header) == body
        return _equals_integer(number, body)
    return isinstance(body, str) and header == body


def _equals_integer(number: re.Match[str], body: int) -> bool:
    """Whether a decimal number equals an integer exactly (in integers: as floats, 2**53 + 1 is 2**53; and without
    the `decimal` module, which a cold start would pay for)."""
    whole, fraction, exponent = number.group(1), number.group(2) or "", number.group(3) or "0"
    sign = "-" if whole.startswith("-") else ""
    # Zeros that change nothing go first, so only digits that count meet int()'s limit on a string's length.
    significant = (whole.lstrip("-") + fraction).lstrip("0")
    kept = significant.rstrip("0")
    exponent_digits = exponent.lstrip("+-").lstrip("0")
    if len(exponent_digits) > len(str(_MAX_SCALE)) or len(kept) > _MAX_DIGITS:
        return False  # no integer a JSON body can carry
    exponent_sign = "-" if exponent.startswith("-") else ""
    scale = int(exponent_sign + (exponent_digits or "0")) - len(fraction) + len(significant) - len(kept)
    if abs(scale) > _MAX_SCALE:
        return False
    digits = int(sign + (kept or "0"))
    power: int = 10 ** abs(scale)
    if scale >= 0:
        return digits * power == body
    quotient, remainder = divmod(digits, power)
    return remainder == 0 and quotient == body


def check_stateless_headers(headers: Headers, method: str, params: dict[str, Any], tools: Mapping[str, Tool]) -> None:
    """Raise HeaderMismatchError unless every mirrored header matches the body."""
    _require(headers, "mcp-protocol-version", str(params["_meta"][versions.PROTOCOL_VERSION_META]))
    _require(headers, "mcp-method", method)
    field = NAMED_METHODS.get(method)
    if field is not None and isinstance(params.get(field), str):
        _require(headers, "mcp-name", params[field])
    if method == "tools/call":
        _check_parameter_headers(headers, params, tools)


def _check_parameter_headers(headers: Headers, params: dict[str, Any], tools: Mapping[str, Tool]) -> None:
    name = params.get("name")
    tool = tools.get(name) if isinstance(name, str) else None
    arguments = params.get("arguments")
    if tool is None or not isinstance(arguments, dict):
        return
    for argument, header_name in tool.header_parameters.items():
        value = arguments.get(argument)
        if value is None:
            continue
        raw = headers.get(f"mcp-param-{header_name}".lower())
        if raw is None:
            raise HeaderMismatchError(f"Header mismatch: required header Mcp-Param-{header_name} is missing")
        if not _same_value(decode_header_value(f"Mcp-Param-{header_name}", raw), value):
            raise HeaderMismatchError(f"Header mismatch: Mcp-Param-{header_name} does not match the request body")
