"""What the endpoint answers: an HTTP status, an optional JSON body and headers."""

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from stratus.errors import McpError, StoreUnavailableError
from stratus.protocol.jsonrpc import RequestId, error_response

_NO_HEADERS: Mapping[str, str] = MappingProxyType({})
logger = logging.getLogger("stratus.transport")


class Reply(NamedTuple):
    """One HTTP answer; `payload` None means an empty body."""

    status: int
    payload: Any = None
    headers: Mapping[str, str] = _NO_HEADERS


ACCEPTED = Reply(202)
SUSPENDED = Reply(200)
"""A call that asked its client something and was suspended (`stratus.protocol.relayed_calls`): its stream carried
the questions and ends with them, without a response; the client polls for the rest."""


def error_reply(request_id: RequestId | None, error: McpError) -> Reply:
    """A JSON-RPC error response at the error's HTTP status. A store that failed is logged with its cause and fix:
    the client is told to retry, the operator needs to know why."""
    if isinstance(error, StoreUnavailableError):
        logger.warning(
            "the state store failed: %s; the request was answered %d (STRATUS_STORE)",
            error.cause or "it did not answer",
            error.http_status,
        )
    return Reply(error.http_status, error_response(request_id, error), error.headers)
