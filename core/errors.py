"""The errors Stratus raises on purpose, and the one place they become wire errors.

McpError                      a JSON-RPC error with an HTTP status for the transport
├── ParseError                -32700, 400: the body is not JSON
├── InvalidRequestError       -32600, 400: JSON, but not a JSON-RPC message we accept
├── MethodNotFoundError       -32601: unknown method (404 on the 2026-07-28 wire, else 200)
├── InvalidParamsError        -32602: params failed validation (unknown tool, bad cursor, ...)
│   └── UnencodableTextError  -32602, 400: text UTF-8 cannot encode (a lone surrogate) in a request to pass on
├── InternalError             -32603, 500: a bug; the message never carries exception text
├── HeaderMismatchError       -32020, 400: Mcp-* headers disagree with the body
├── MissingCapabilityError    -32021, 400: the request needs a client capability it did not declare
├── UnsupportedVersionError   -32022, 400: protocol version the server does not speak
├── RetryLaterError           a refusal to retry after `retry_after` seconds (data: retryAfterSeconds, setting)
│   ├── RateLimitedError      -31429: a rate limit is exhausted
│   └── CircuitOpenError      -31503: the tool's circuit breaker is open
├── TooManySessionsError      -31503, 503: the deployment's maximum session count is reached (STRATUS_MAX_SESSIONS)
│   └── PrincipalSessionsFullError   ... or the caller's own quota of sessions (STRATUS_MAX_SESSIONS_PER_PRINCIPAL)
├── CapReachedError           -31429, 429 (the caller's cap) / -31503, 503 (the process's); names its setting
│   ├── TooManyStreamsError   ... on open streams
│   └── TooManyTasksError     ... on running tasks
├── ResponseTooLargeError     -32603: an answer past the buffered front door's payload limit (names its setting)
├── RecordTooLargeError       -32603: a value past what the state store keeps in one record (names its setting)
└── HttpError                 -32600, refused before the JSON-RPC message is read (403, 405, 406, 413, 415, 421)
"""

from __future__ import annotations

from typing import Any, ClassVar

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
# Stratus's own codes sit outside the JSON-RPC reserved range, as the 2026-07-28 spec asks; they echo HTTP statuses.
UNAUTHORIZED = -31401
FORBIDDEN = -31403
RATE_LIMITED = -31429
CIRCUIT_OPEN = -31503
REQUEST_TIMEOUT = -31504
STORE_UNAVAILABLE = -31502


class McpError(Exception):
    """A protocol failure answered with a JSON-RPC error object."""

    code: int = INTERNAL_ERROR
    http_status: int = 200

    def __init__(self, message: str, *, data: Any = None, http_status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        self.headers: dict[str, str] = {}
        if http_status is not None:
            self.http_status = http_status

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC `error` member for this failure."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(McpError):
    """The request body is not valid JSON."""

    code = PARSE_ERROR
    http_status = 400


class InvalidRequestError(McpError):
    """The body is JSON but not a JSON-RPC message this endpoint accepts."""

    code = INVALID_REQUEST
    http_status = 400


class MethodNotFoundError(McpError):
    """The method is not implemented (or not part of the request's protocol era)."""

    code = METHOD_NOT_FOUND


class InvalidParamsError(McpError):
    """The params of a known method failed validation."""

    code = INVALID_PARAMS


class UnencodableTextError(InvalidParamsError):
    """A request to pass on (the gateway's, to an upstream) holds text UTF-8 cannot encode: a lone UTF-16 surrogate.
    The caller's input, never a failure of where it was going: no breaker counts an McpError."""

    http_status = 400

    def __init__(self, what: str) -> None:
        super().__init__(f"Invalid params: {what} holds a lone UTF-16 surrogate, which UTF-8 cannot encode")


class InternalError(McpError):
    """An unexpected failure; the client sees only a correlation id."""

    code = INTERNAL_ERROR
    http_status = 500


class HeaderMismatchError(McpError):
    """A mirrored `Mcp-*` header is missing, malformed or disagrees with the body."""

    code = HEADER_MISMATCH
    http_status = 400


class MissingCapabilityError(McpError):
    """Serving the request needs a client capability the request did not declare."""

    code = MISSING_CLIENT_CAPABILITY
    http_status = 400

    def __init__(self, required: dict[str, Any]) -> None:
        names = ", ".join(sorted(required))
        super().__init__(f"Missing required client capability: {names}", data={"requiredCapabilities": required})


class UnsupportedVersionError(McpError):
    """The requested protocol version is not one this server speaks."""

    code = UNSUPPORTED_PROTOCOL_VERSION
    http_status = 400

    def __init__(self, requested: str, supported: list[str]) -> None:
        super().__init__("Unsupported protocol version", data={"supported": supported, "requested": requested})


class UnauthorizedError(McpError):
    """The request carries no valid credentials."""

    code = UNAUTHORIZED
    http_status = 401

    def __init__(self, message: str, *, challenge: str, data: Any = None) -> None:
        super().__init__(message, data=data)
        self.headers = {"www-authenticate": challenge}


class ForbiddenError(McpError):
    """The caller is known but may not use this tool, resource or prompt."""

    code = FORBIDDEN
    http_status = 403

    def __init__(self, message: str, *, challenge: str | None = None) -> None:
        super().__init__(message)
        self.headers = {"www-authenticate": challenge} if challenge else {}


class RetryLaterError(McpError):
    """Refused for now: the client may retry after `retry_after` seconds (at least a millisecond, to the
    millisecond); `data.setting` names what sets the limit."""

    def __init__(self, reason: str, retry_after: float, setting: str) -> None:
        seconds = round(max(retry_after, 0.001), 3)
        super().__init__(f"{reason}; retry after {seconds}s", data={"retryAfterSeconds": seconds, "setting": setting})
        self.retry_after = seconds


class RateLimitedError(RetryLaterError):
    """A rate limit is exhausted; retry after `retry_after` seconds."""

    code = RATE_LIMITED

    SETTINGS: ClassVar[dict[str, str]] = {
        "tool": "the tool's rate_limit, or RateLimits.per_tool",
        "principal": "RateLimits.per_principal",
        "session": "RateLimits.per_session",
        "overall": "RateLimits.overall",
    }
    """Where the server's code sets each scope's limit: `@server.tool(rate_limit=...)`,
    `McpServer(rate_limits=...)`."""

    def __init__(self, scope: str, retry_after: float) -> None:
        super().__init__(f"Rate limit exceeded ({scope})", retry_after, self.SETTINGS.get(scope, "RateLimits"))


class CircuitOpenError(RetryLaterError):
    """The circuit breaker of this tool is open: recent calls failed, so this one fails fast."""

    code = CIRCUIT_OPEN
    SETTING = "BreakerPolicy (the tool's breaker, or the McpServer's): failure_threshold, cooldown_seconds"

    def __init__(self, name: str, retry_after: float) -> None:
        super().__init__(f"Tool '{name}' is temporarily unavailable (circuit open)", retry_after, self.SETTING)


class RequestTimeoutError(McpError):
    """The request did not finish before its deadline."""

    code = REQUEST_TIMEOUT


class StoreUnavailableError(McpError):
    """The state store (Redis, DynamoDB) did not answer within its bounded time; nothing was changed for sure."""

    code = STORE_UNAVAILABLE
    http_status = 503
    retry_after_seconds = 1
    SETTING: str | None = "STRATUS_STORE"
    """What points Stratus at a store that answers (say, a Redis not started yet on a newcomer's machine)."""

    def __init__(self, message: str, *, cause: str | None = None) -> None:
        super().__init__(message, data={"setting": self.SETTING} if self.SETTING else None)
        self.headers = {"retry-after": str(self.retry_after_seconds)}
        self.cause = cause
        """For the operator's log only, never a client: what failed (the exception's class, the endpoint, the
        store's error code) and what fixes it."""


class StoreBusyError(StoreUnavailableError):
    """The store answered, but every attempt lost a race with other writers of the same item. Unlike an outage,
    this is never let through by a fail-open policy: letting it through would spend a limit twice. No setting
    undoes contention, so it names none."""

    SETTING = None


class TooManySessionsError(McpError):
    """Every place is taken: the deployment holds its maximum number of live sessions (across all containers).
    Shares -31503 with an open circuit, since both are 503 Service Unavailable; `data.maxSessions` tells it."""

    code = CIRCUIT_OPEN
    http_status = 503
    SETTING = "STRATUS_MAX_SESSIONS"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"Maximum sessions reached ({limit}); end a session, retry later, or raise {self.SETTING}",
            data={"maxSessions": limit, "setting": self.SETTING},
        )
        self.limit = limit


class PrincipalSessionsFullError(TooManySessionsError):
    """The caller already holds its quota of live sessions, so one principal cannot take every place of the
    deployment; other principals still get theirs. `data.setting` names what raises the quota."""

    SETTING = "STRATUS_MAX_SESSIONS_PER_PRINCIPAL"

    def __init__(self, limit: int) -> None:
        McpError.__init__(
            self,
            f"Maximum sessions per principal reached ({limit}); end one of your sessions, retry later, or raise "
            f"{self.SETTING}",
            data={"maxSessionsPerPrincipal": limit, "setting": self.SETTING},
        )
        self.limit = limit


class CapReachedError(McpError):
    """A cap on what a caller holds at once is reached: a cap of the caller's own (per session, per principal) is 429,
    the process's is 503, the server being busy. Either way the client retries after `Retry-After`, and
    `data.setting` names what raises the cap."""

    RETRY_AFTER_SECONDS = 5

    def __init__(self, message: str, *, setting: str, limit: int, busy: bool) -> None:
        super().__init__(
            message,
            data={"setting": setting, "limit": limit, "retryAfterSeconds": self.RETRY_AFTER_SECONDS},
            http_status=503 if busy else 429,
        )
        self.code = CIRCUIT_OPEN if busy else RATE_LIMITED
        self.headers = {"retry-after": str(self.RETRY_AFTER_SECONDS)}


class TooManyStreamsError(CapReachedError):
    """A cap on open streams (SSE responses that follow the notification log) is reached."""


class TooManyTasksError(CapReachedError):
    """A cap on running tasks is reached: the principal's own (429) or the process's (503); the client may also retry
    once one of its tasks has ended."""


class HttpError(McpError):
    """A request refused at the HTTP layer, before its JSON-RPC message is read."""

    code = INVALID_REQUEST

    def __init__(self, status: int, message: str, *, headers: dict[str, str] | None = None, data: Any = None) -> None:
        super().__init__(message, data=data, http_status=status)
        self.headers = headers or {}


class ResponseTooLargeError(McpError):
    """An answer too large for a buffered front door: Lambda returns at most 6 MB from a synchronous invocation, and
    API Gateway or the Function URL would answer its own bare 5xx instead. The request itself ran; the client can
    call the streaming endpoint (its limit is 200 MB) or ask for less. `data.setting` names the limit."""

    SETTING = "STRATUS_MAX_RESPONSE_BYTES"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"Result too large for this buffered endpoint: about {size} bytes as Lambda returns it, over the "
            f"{limit}-byte limit ({self.SETTING}; a buffered Lambda response is at most 6 MB). Call the streaming "
            "endpoint (the streaming Function URL or REST API) for large results, or ask for less",
            data={"setting": self.SETTING, "limit": limit, "size": size},
        )


class RecordTooLargeError(McpError):
    """A value larger than the state store keeps in one record (a DynamoDB item is at most 400 KB; every backend
    applies the same bound, so a deployment behaves the same on each). `data.setting` names the bound."""

    SETTING = "STRATUS_MAX_RECORD_BYTES"

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(
            f"{what} is too large to keep: {size} bytes, over the {limit}-byte limit of one stored record "
            f"({self.SETTING}; a DynamoDB item is at most 400 KB)",
            data={"setting": self.SETTING, "limit": limit, "size": size},
        )
