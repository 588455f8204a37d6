"""The buffered front door's payload limit: an answer Lambda could not return is replaced by a JSON-RPC error.

A buffered Lambda invocation (API Gateway HTTP or REST API, a `BUFFERED` Function URL) returns at most 6 MB
(https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html, "Invocation payload (request and
response)"). What counts is the handler's whole answer as JSON: the status, the headers (Mangum writes them as
`headers` and, for the REST API, again as `multiValueHeaders`) and the body as a JSON string, where every `"` and
`\\` is escaped and, when the runtime escapes to ASCII, each non-ASCII character becomes `\\uXXXX`. Past the limit
Lambda fails the invocation and the front door answers its own bare 5xx; the client never learns why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stratus.errors import ResponseTooLargeError
from stratus.protocol.jsonrpc import encode, error_response
from stratus.transport.http_reply import Reply

ENVELOPE_BYTES = 1024
"""The rest of the handler's answer: `statusCode`, `isBase64Encoded`, `cookies`, the member names, and the CORS
headers added after the reply is built (each well under 200 bytes)."""
MAX_ESCAPE_RATIO = 6
"""No byte of a JSON body grows past 6 bytes when the body is written as a JSON string (a control character's
`\\u001f` escape already is one; a non-ASCII character's UTF-8 bytes become at most 6 ASCII bytes each)."""


def lambda_payload_bytes(body: bytes, headers: Mapping[str, str]) -> int:
    """At most how many bytes the Lambda runtime writes for a buffered answer with this body and these headers:
    the body measured as a JSON string escaped to ASCII (the larger of the runtime's two possible encodings)."""
    escaped = len(json.dumps(body.decode("utf-8", "replace")))
    return escaped + 2 * len(json.dumps(dict(headers))) + ENVELOPE_BYTES


def buffered_body(reply: Reply, limit: int) -> tuple[Reply, bytes]:
    """The reply and its JSON body, or, when the body would take Lambda's answer past `limit` bytes (0: no limit),
    a JSON-RPC error in its place answering the same request ids. The error's headers are the reply's own (the
    session id stays)."""
    body = encode(reply.payload)
    if limit <= 0 or len(body) * MAX_ESCAPE_RATIO + ENVELOPE_BYTES <= limit // 2:  # surely within: not measured
        return reply, body
    size = lambda_payload_bytes(body, reply.headers)
    if size <= limit:
        return reply, body
    error = ResponseTooLargeError(size, limit)
    status, payload = _in_place_of(reply.status, reply.payload, error)
    return Reply(status, payload, reply.headers), encode(payload)


def _in_place_of(status: int, payload: Any, error: ResponseTooLargeError) -> tuple[int, Any]:
    if isinstance(payload, list):  # a batch: each answered request gets the error under its own id
        return status, [error_response(item.get("id"), error) for item in payload if isinstance(item, dict)]
    if isinstance(payload, dict) and "sessionId" in payload and "jsonrpc" not in payload:
        # The session REST API's answer: its errors carry their HTTP status (internal: 500).
        return 500, {"sessionId": payload["sessionId"], "error": error.to_error()}
    request_id = payload.get("id") if isinstance(payload, dict) else None
    return status, error_response(request_id, error)
