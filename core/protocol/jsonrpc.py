"""JSON-RPC 2.0 envelopes: read one message from decoded JSON, write responses.

Messages stay plain dicts on the wire; this module only classifies and checks them, so the hot path
builds no models.
"""

import json
import json.scanner
import re
from typing import Any, NamedTuple

from stratus.errors import InvalidRequestError, McpError, ParseError
from stratus.json_text import compact
from stratus.types import JsonObject

RequestId = str | int


class Request(NamedTuple):
    """A call that expects exactly one response."""

    id: RequestId
    method: str
    params: JsonObject


class Notification(NamedTuple):
    """A one-way message; it never gets a response."""

    method: str
    params: JsonObject


class ClientResponse(NamedTuple):
    """The client's answer to a request the server sent it."""

    id: RequestId
    result: JsonObject | None
    error: JsonObject | None


Message = Request | Notification | ClientResponse


def decode(body: bytes) -> Any:
    """Decode a request body, raising ParseError for anything that is not UTF-8 JSON (or nests deeper than the
    interpreter's recursion limit lets the parser go, or holds a lone surrogate)."""
    try:
        if body[:1] == b"{" and body[1:2] not in (b"", b"\x00"):
            # What json.loads would find (detect_encoding: no BOM, no UTF-16/32 zero byte; no leading whitespace),
            # scanned without its layers (two Python frames and two whitespace patterns, about 5 k a call).
            text = body.decode("utf-8")
            value, end = _SCAN(text, 0)
            if end != len(text) and text[end:].strip(_JSON_WHITESPACE):
                raise ValueError("extra data after the JSON value")
        else:
            text = body.decode(json.detect_encoding(body))
            value = _DECODER.decode(text)
    except (ValueError, UnicodeDecodeError, StopIteration):
        raise ParseError("Parse error: the body is not valid JSON") from None
    except RecursionError:
        raise ParseError("Parse error: the JSON is nested too deeply") from None
    # Strict decoding refuses a surrogate written as UTF-8 bytes; an escaped one (`"\ud800"`) parses, and would fail
    # only when an answer echoing it is encoded. Text with no backslash (most) has none: one memchr tells.
    escape = text.find("\\")
    if escape >= 0 and _escapes_lone_surrogate(text, escape):
        raise ParseError(LONE_SURROGATE)
    return value


LONE_SURROGATE = "Parse error: the JSON holds a lone UTF-16 surrogate (\\ud800 to \\udfff), which is no character"
"""MCP's messages must be UTF-8, which cannot encode a lone surrogate: such text is refused like invalid UTF-8."""
_DECODER = json.JSONDecoder()
_SCAN = json.scanner.make_scanner(_DECODER)  # type: ignore[arg-type]  # typeshed: any object with its attributes
"""The decoder's own scanner (C where the interpreter has it): the value at an index and where it ends; raises
StopIteration where no value starts."""
_JSON_WHITESPACE = " \t\n\r"
_SURROGATE_ESCAPE = r"\\u[dD][89a-fA-F]"
_ESCAPES_OF_CHARACTERS = (
    r"(?:[^\\]++|\\[^u]|\\u(?![dD][89a-fA-F])[0-9a-fA-F]{4}"
    r"|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})*+"
)
"""Text whose every escape stands for a character: a surrogate's only as the high half before its low half. Matched
from a backslash that starts an escape, it stops at the first lone surrogate."""
_patterns: tuple[re.Pattern[str], re.Pattern[str]] | None = None
"""The two patterns, compiled on first use: compiling costs a cold start, and most bodies never need them."""


def _escapes_lone_surrogate(text: str, first_backslash: int) -> bool:
    """Whether valid JSON text (its first backslash at `first_backslash`) escapes a surrogate that is not the half
    of a high-low pair. Both scans run in C; the exact one only when some escape is of a surrogate at all."""
    global _patterns
    if _patterns is None:
        _patterns = re.compile(_SURROGATE_ESCAPE), re.compile(_ESCAPES_OF_CHARACTERS)
    candidate, characters = _patterns
    if candidate.search(text, first_backslash) is None:
        return False
    matched = characters.match(text, first_backslash)
    return matched is None or matched.end() != len(text)


def encode(payload: Any) -> bytes:
    """Encode a response payload compactly."""
    return compact(payload).encode()


def _valid_id(value: Any) -> bool:
    # bool is an int subclass, and JSON-RPC ids are strings or integers only; MCP forbids null.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def parse_message(obj: Any) -> Message:
    """Classify one decoded JSON value as a request, notification or response.

    Raises:
        InvalidRequestError: the value is not a JSON-RPC 2.0 message MCP allows.
    """
    if not isinstance(obj, dict):
        raise InvalidRequestError("Invalid request: a JSON-RPC message must be a JSON object")
    raw_id = obj.get("id")
    reply_id = raw_id if _valid_id(raw_id) else None
    if obj.get("jsonrpc") != "2.0":
        raise InvalidRequestError('Invalid request: "jsonrpc" must be "2.0"')
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or not method:
            raise InvalidRequestError('Invalid request: "method" must be a non-empty string')
        params = obj.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise InvalidRequestError('Invalid request: "params" must be an object')
        if "id" not in obj:
            return Notification(method, params)
        if reply_id is None:
            raise InvalidRequestError('Invalid request: "id" must be a string or an integer, never null')
        return Request(reply_id, method, params)
    if "result" in obj or "error" in obj:
        if reply_id is None:
            raise InvalidRequestError('Invalid request: a response needs a string or integer "id"')
        result, error = obj.get("result"), obj.get("error")
        if not isinstance(result, dict | None) or not isinstance(error, dict | None):
            raise InvalidRequestError("Invalid request: malformed response")
        return ClientResponse(reply_id, result, error)
    raise InvalidRequestError("Invalid request: neither a request, a notification nor a response")


def request_id_of(obj: Any) -> RequestId | None:
    """The id to echo in an error about `obj`, when it has a usable one."""
    if isinstance(obj, dict):
        value = obj.get("id")
        if _valid_id(value):
            return value
    return None


def result_response(request_id: RequestId, result: JsonObject) -> JsonObject:
    """A successful response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId | None, error: McpError) -> JsonObject:
    """An error response; `id` is omitted when the request's id could not be read."""
    response: JsonObject = {"jsonrpc": "2.0", "error": error.to_error()}
    if request_id is not None:
        response["id"] = request_id
    return response
