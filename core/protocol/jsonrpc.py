"""JSON-RPC 2.0 envelopes: read one message from decoded JSON, write responses.

Messages stay plain dicts on the wire; this module only classifies and checks them, so the hot path
builds no models.
"""

from __future__ import annotations

import json
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
    interpreter's recursion limit lets the parser go)."""
    try:
        if body[:1] == b"{" and body[1:2] not in (b"", b"\x00"):
            # What json.loads would find (detect_encoding: no BOM, no UTF-16/32 zero byte), without its layers.
            return _DECODER.decode(body.decode("utf-8", "surrogatepass"))
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ParseError("Parse error: the body is not valid JSON") from None
    except RecursionError:
        raise ParseError("Parse error: the JSON is nested too deeply") from None


_DECODER = json.JSONDecoder()


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
