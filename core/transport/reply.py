"""What the endpoint answers: an HTTP status, an optional JSON body and headers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.errors import McpError
from core.protocol.jsonrpc import RequestId, error_response


@dataclass(frozen=True, slots=True)
class Reply:
    """One HTTP answer; `payload` None means an empty body."""

    status: int
    payload: Any = None
    headers: dict[str, str] = field(default_factory=dict)


ACCEPTED = Reply(202)


def error_reply(request_id: RequestId | None, error: McpError) -> Reply:
    """A JSON-RPC error response at the error's HTTP status."""
    return Reply(error.http_status, error_response(request_id, error), error.headers)
