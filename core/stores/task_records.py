"""What a task's or a relayed call's record holds: the call it runs (`TaskRequest`, `RelayedCall`), where that
call came to (`TaskOutcome`), and the one encoding a shared store keeps them in.

The encoding is the JSON every release since tasks came has written (a task's request
`{"tool", "arguments", "version", "ttlMs", "principal", "clientCapabilities", "place"}`, a relayed call's
`{"session", "token", "id", "params", "principal"}`, an outcome `{"result"}`, `{"error"}`,
`{"inputRequests", "asked"}` and/or `{"statusMessage"}`), so records stored before a deploy read after it, and
the other way round. Keys an older release did not write (`clientCapabilities`, `place`) read as absent.

Loaded with the first task, not at cold start (`TaskRecord` names these types as strings).
"""

import json
from typing import Any, NamedTuple

from stratus.errors import McpError
from stratus.types import JsonObject

DEFAULT_TTL_MS = 3_600_000


class KeptPrincipal(NamedTuple):
    """What a call run later keeps of its caller to run as it: identity, scopes, roles and the issuer, never the
    token."""

    subject: str
    scopes: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    issuer: str | None = None


class TaskRequest(NamedTuple):
    """A task: the tools/call it runs, as its caller made it, and how long its record lives."""

    tool: str
    arguments: JsonObject
    version: str
    """The era of the call that created it (the task runs in that era)."""
    principal: KeptPrincipal | None
    client_capabilities: JsonObject
    ttl_ms: int = DEFAULT_TTL_MS
    place: str | None = None
    """The key of the place the task holds in its principal's quota (`stratus.protocol.task_quota`), if any."""


class RelayedCall(NamedTuple):
    """A handshake-era call run in the task worker (`stratus.protocol.relayed_calls`): the request its client sent
    in its session (whose version and capabilities it runs with), and the stream log it answers on."""

    tool: str
    arguments: JsonObject
    request_id: str | int
    session_id: str
    stream_token: str
    principal: KeptPrincipal | None
    meta: JsonObject | None = None
    """The request's `_meta` (its progress token, ...)."""
    trace: dict[str, str] | None = None
    """The W3C trace context of the request's span, which each of the call's runs continues (the run after an answer
    too, launched by no request of its own); None with tracing off."""


class RpcError(NamedTuple):
    """A JSON-RPC error object, as the call's client would have received it."""

    code: int
    message: str
    data: Any = None

    @classmethod
    def of(cls, error: McpError) -> "RpcError":
        """The error a task keeps of a failure."""
        return cls(error.code, error.message, error.data)

    def to_error(self) -> JsonObject:
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class TaskOutcome(NamedTuple):
    """Where a task's run came to: its result or JSON-RPC error, or its client's questions it waits on; a status
    message (cancelled, or the run died)."""

    result: JsonObject | None = None
    error: RpcError | None = None
    input_requests: JsonObject | None = None
    """The questions of the run that asked, by key."""
    asked: tuple[str, ...] = ()
    """Every question key the task's runs have asked so far (their answers are replayed to the next run)."""
    status_message: str | None = None


def encode_request(request: TaskRequest | RelayedCall) -> str:
    """What a shared store keeps of the call a record runs, as compact JSON."""
    principal = _principal_fields(request.principal)
    if isinstance(request, RelayedCall):
        params: JsonObject = {"name": request.tool, "arguments": request.arguments}
        if request.meta is not None:
            params["_meta"] = request.meta
        fields: JsonObject = {
            "session": request.session_id,
            "token": request.stream_token,
            "id": request.request_id,
            "params": params,
            "principal": principal,
        }
        if request.trace:
            fields["trace"] = request.trace
    else:
        fields = {
            "tool": request.tool,
            "arguments": request.arguments,
            "version": request.version,
            "ttlMs": request.ttl_ms,
            "principal": principal,
            "clientCapabilities": request.client_capabilities,
            "place": request.place,
        }
    return json.dumps(fields, separators=(",", ":"))


def decode_request(data: str) -> TaskRequest | RelayedCall:
    """The call `encode_request` (or any earlier release) wrote."""
    fields = json.loads(data)
    principal = _principal_from(fields.get("principal"))
    if "session" in fields:
        params = fields["params"]
        return RelayedCall(
            tool=params["name"],
            arguments=params.get("arguments") or {},
            request_id=fields["id"],
            session_id=fields["session"],
            stream_token=fields["token"],
            principal=principal,
            meta=params.get("_meta"),
            trace=fields.get("trace"),
        )
    return TaskRequest(
        tool=fields["tool"],
        arguments=fields.get("arguments") or {},
        version=fields["version"],
        principal=principal,
        client_capabilities=fields.get("clientCapabilities") or {},
        ttl_ms=fields.get("ttlMs", DEFAULT_TTL_MS),
        place=fields.get("place"),
    )


def encode_outcome(outcome: TaskOutcome) -> str:
    """What a shared store keeps of a task's outcome, as compact JSON (absent parts left out)."""
    fields: JsonObject = {}
    if outcome.result is not None:
        fields["result"] = outcome.result
    if outcome.error is not None:
        fields["error"] = outcome.error.to_error()
    if outcome.input_requests is not None:
        fields["inputRequests"] = outcome.input_requests
    if outcome.asked:
        fields["asked"] = list(outcome.asked)
    if outcome.status_message is not None:
        fields["statusMessage"] = outcome.status_message
    return json.dumps(fields, separators=(",", ":"))


def decode_outcome(data: str) -> TaskOutcome:
    """The outcome `encode_outcome` (or any earlier release) wrote."""
    fields = json.loads(data) if data else {}
    if not isinstance(fields, dict):
        return TaskOutcome()
    error = fields.get("error")
    message = fields.get("statusMessage")
    return TaskOutcome(
        result=fields.get("result"),
        error=RpcError(int(error.get("code", -32603)), str(error.get("message", "")), error.get("data"))
        if isinstance(error, dict)
        else None,
        input_requests=fields.get("inputRequests"),
        asked=tuple(fields.get("asked") or ()),
        status_message=message if isinstance(message, str) else None,
    )


def _principal_fields(principal: KeptPrincipal | None) -> JsonObject | None:
    if principal is None:
        return None
    return {
        "subject": principal.subject,
        "scopes": sorted(principal.scopes),
        "roles": sorted(principal.roles),
        "claims": {"iss": principal.issuer} if principal.issuer is not None else {},
    }


def _principal_from(fields: JsonObject | None) -> KeptPrincipal | None:
    if fields is None:
        return None
    issuer = (fields.get("claims") or {}).get("iss")
    return KeptPrincipal(
        subject=fields["subject"],
        scopes=tuple(fields.get("scopes") or ()),
        roles=tuple(fields.get("roles") or ()),
        issuer=issuer if isinstance(issuer, str) else None,
    )
