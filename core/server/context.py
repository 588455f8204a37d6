"""The execution context a handler receives when it declares a parameter of type `Context`.

What the request is and who sent it, and what a handler may do with the client: report progress, send log
messages, ask (elicitation, sampling, roots) and notify. On a streamed response (uvicorn, the streaming Lambda
shape) these reach the client on the call's SSE stream; at 2026-07-28 a question ends the round with
`input_required`. On a single JSON answer (the buffered Lambda shape, handshake era) progress and logs are
no-ops and a question is a clear error, never a hang.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from stratus.errors import McpError, MissingCapabilityError
from stratus.metrics import MetricsSink
from stratus.request.http import HttpRequest
from stratus.request.inputs import InputRound
from stratus.request.outbound import ClientError, Outbound, level_allows
from stratus.request.signal import CancellationSignal
from stratus.resilience.deadline import Deadline
from stratus.server.principal import Principal
from stratus.tracing import child_span

if TYPE_CHECKING:
    from stratus.server.steps import StepJournal

logger = logging.getLogger("stratus.tool")
_new = object.__new__
_set = object.__setattr__


class StreamRequiredError(McpError):
    """The handler asked for something only a streamed response can carry."""

    code = -32603
    http_status = 200


@dataclass(frozen=True, kw_only=True)
class Context:
    """What a tool, resource or prompt handler knows about the request it serves.

    Middleware rewrites it with `dataclasses.replace`; `metadata` is a scratch map shared along one call.
    """

    request_id: str | int
    method: str
    protocol_version: str
    session_id: str | None = None
    transport: str = "streamable-http"
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    request: HttpRequest | None = None
    """The HTTP request the call arrived in (None for a task run later, or a call from inside the process)."""
    user: Principal | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    signal: CancellationSignal = field(default_factory=CancellationSignal)
    deadline: Deadline | None = None
    item: str | None = None
    """The tool name, resource URI (for a templated resource, its URI template) or prompt name being served: a
    name from the server's catalog, never one the client made up, so metrics can use it as a dimension."""
    log_level: str | None = None
    """The client's threshold for log messages (handshake-era `logging/setLevel`, 2026-07-28 `_meta` logLevel)."""
    log_opted_in: bool = True
    """Whether the client wants log messages at all (at 2026-07-28 only when its `_meta` sets a level)."""
    inputs: InputRound | None = None
    """At 2026-07-28: the answers this attempt carries; questions without one end the round (MRTR)."""
    publish: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None
    """Sends a server-wide notification to every listening session, on any container."""
    metrics: MetricsSink | None = None
    """Where the app serving the call counts its metrics (a gateway counts its upstream calls there)."""
    steps: StepJournal | None = None
    """Where a task's run keeps its steps (`step`); None outside a task."""

    @classmethod
    def of_fields(cls, fields: dict[str, Any]) -> Context:
        """A context holding `fields`, which names every field (no defaults are filled in)."""
        # Not the generated `__init__`, which sets each of the 18 fields through `object.__setattr__`: about 30 k
        # instructions of every call, which builds one context per request (docs/benchmarks.md).
        context = _new(cls)
        _set(context, "__dict__", fields)
        return context

    async def step(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """`fn(*args, **kwargs)` (awaited when it returns a coroutine) as the task's step `name`: its result, which
        must be JSON, is kept, and a later run of the same task (after its client answered a question, or a launch
        delivered again) returns it without running `fn`. Outside a task, `fn` simply runs.

        Raises:
            StepError: `name` was used before in this run, or the result is not JSON or over 256 KiB.
        """
        with child_span("step", name):
            if self.steps is None:
                from stratus.server.steps import run_step  # off the cold path: most tools take no steps

                return await run_step(fn, args, kwargs)
            return await self.steps.step(name, fn, args, kwargs)

    @property
    def progress_token(self) -> str | int | None:
        """The client's progress token for this request, if it asked for progress."""
        token = self.meta.get("progressToken")
        return token if isinstance(token, str | int) else None

    @property
    def headers(self) -> Mapping[str, str]:
        """The HTTP headers the call arrived with, by lower-case name (empty without a request). They carry
        credentials (`authorization`): read them, never log them."""
        return self.request.headers if self.request is not None else _NO_HEADERS

    @property
    def lambda_event(self) -> Mapping[str, Any] | None:
        """The raw Lambda event of the buffered shape (API Gateway, Function URL, ALB); None under uvicorn (the
        streaming shape, `stratus serve`). Never log it: it carries the request's headers and body."""
        return self.request.lambda_event if self.request is not None else None

    @property
    def lambda_context(self) -> Any:
        """The Lambda context object (`aws_request_id`, `get_remaining_time_in_millis()`, ...) of the buffered
        shape, or of a task run by the task worker; None elsewhere."""
        return self.request.lambda_context if self.request is not None else None

    @property
    def authorizer_claims(self) -> Mapping[str, Any] | None:
        """The claims an API Gateway authorizer established: `requestContext.authorizer` of the Lambda event
        (HTTP API JWT claims, a REST Cognito authorizer's claims, a Lambda authorizer's context). Under the
        streaming shape they come from the `x-amzn-request-context` header the Web Adapter sets, and only when
        `STRATUS_TRUST_REQUEST_CONTEXT_HEADER` says the adapter is in front (anyone else could write it). None when
        no authorizer ran. Not the same as `user`, the principal Stratus's own authentication established."""
        return self.request.authorizer_claims if self.request is not None else None

    @property
    def outbound(self) -> Outbound | None:
        return self.request.outbound if self.request is not None else None

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress to a client that asked for it (a `progressToken`), on the call's stream; a no-op on a
        single JSON response, which cannot carry it."""
        token = self.progress_token
        if self.outbound is None or token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.outbound.notify("notifications/progress", params)

    async def stream_content(self, content: Any) -> None:
        """Send partial output ahead of the result, as content blocks (text for a string; `Image` and the other
        content types as themselves). MCP has no message of its own for it, so it rides the log channel: a
        `notifications/message` at level info from this tool, with `{"content": [...]}` as its data, sent only to
        a client that wants info-level log messages. A no-op on a single JSON response: the result still carries
        everything the tool returns."""
        if self.outbound is not None and self.log_opted_in and level_allows("info", self.log_level):
            from stratus.server.content import to_content_list

            data = {"content": to_content_list(content)}
            await self.outbound.notify(
                "notifications/message", {"level": "info", "logger": self.item or "", "data": data}
            )

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to `uri` that it changed, on its GET stream, wherever that is open."""
        if self.publish is not None:
            await self.publish("notifications/resources/updated", {"uri": uri})

    async def notify_list_changed(self, kind: str) -> None:
        """Tell every listening session that the list of `kind` ("tools", "resources" or "prompts") changed."""
        if kind not in ("tools", "resources", "prompts"):
            raise ValueError("kind must be tools, resources or prompts")
        if self.publish is not None:
            await self.publish(f"notifications/{kind}/list_changed", {})

    async def log(self, level: str, message: str, **fields: Any) -> None:
        """Log through the server's logger, and to the client at its level when the response streams. A task's (or
        suspended call's) run that replays its tool writes a line the earlier run wrote once only."""
        if self.steps is None or not await self.steps.replayed_log():
            logger.log(_LEVELS.get(level, logging.INFO), message, extra={"tool_log": fields} if fields else None)
        if self.outbound is not None and self.log_opted_in and level_allows(level, self.log_level):
            data: Any = {"message": message, **fields} if fields else message
            await self.outbound.notify(
                "notifications/message", {"level": level, "logger": self.item or "", "data": data}
            )

    async def debug(self, message: str, **fields: Any) -> None:
        await self.log("debug", message, **fields)

    async def info(self, message: str, **fields: Any) -> None:
        await self.log("info", message, **fields)

    async def warning(self, message: str, **fields: Any) -> None:
        await self.log("warning", message, **fields)

    async def error(self, message: str, **fields: Any) -> None:
        await self.log("error", message, **fields)

    def require_capability(self, name: str) -> None:
        """Fail the request with -32021 unless the client declared capability `name`.

        Raises:
            MissingCapabilityError: the client did not declare it.
        """
        if name not in self.client_capabilities:
            raise MissingCapabilityError({name: {}})

    async def elicit(self, message: str, requested_schema: dict[str, Any], *, key: str | None = None) -> dict[str, Any]:
        """Ask the user for input. Needs the client's `elicitation` capability and a streamed response.

        Raises:
            MissingCapabilityError: the client did not declare elicitation.
            StreamRequiredError: on a JSON-only response.
        """
        self.require_capability("elicitation")
        params = {"message": message, "requestedSchema": requested_schema}
        return await self._ask("elicitation/create", params, "Elicitation", key)

    async def create_message(
        self, messages: list[dict[str, Any]], max_tokens: int, *, key: str | None = None, **params: Any
    ) -> dict[str, Any]:
        """Ask the client's model for a completion. Needs the client's `sampling` capability and a streamed response.

        Raises:
            MissingCapabilityError: the client did not declare sampling.
            StreamRequiredError: on a JSON-only response.
        """
        self.require_capability("sampling")
        request = {"messages": messages, "maxTokens": max_tokens, **params}
        return await self._ask("sampling/createMessage", request, "Sampling", key)

    async def list_roots(self, *, key: str | None = None) -> dict[str, Any]:
        """The client's roots. Needs the client's `roots` capability and a streamed response.

        Raises:
            MissingCapabilityError: the client did not declare roots.
            StreamRequiredError: on a JSON-only response.
        """
        self.require_capability("roots")
        return await self._ask("roots/list", {}, "Listing roots", key)

    async def ask(self, method: str, params: dict[str, Any], *, key: str | None = None) -> dict[str, Any]:
        """Send the client a request of `method` (`sampling/createMessage`, `elicitation/create` or `roots/list`)
        with `params` as they are: what a gateway does with an upstream's question.

        Raises:
            ValueError: not a request a server may send a client.
            MissingCapabilityError: the client did not declare the capability it needs.
            StreamRequiredError: on a JSON-only response.
        """
        capability = CLIENT_REQUESTS.get(method)
        if capability is None:
            raise ValueError(f"{method} is not a request a server sends its client")
        self.require_capability(capability)
        return await self._ask(method, params, method, key)

    async def _ask(self, method: str, params: dict[str, Any], what: str, key: str | None) -> dict[str, Any]:
        """Ask the client: an input request of this round at 2026-07-28, a request on the stream before."""
        if self.inputs is not None:
            answer = self.inputs.answer(method, params, key)
            if set(answer) == {"error"} and isinstance(answer["error"], dict):  # a 2025-11-25 task's client refused
                raise ClientError(answer["error"])
            return answer
        outbound = self.outbound
        if outbound is not None and outbound.buffered:
            raise StreamRequiredError(
                f"{what} needs the client to answer mid-call, which a buffered front door (API Gateway's HTTP API) "
                "cannot carry: call it through a streaming front door (the Function URL or the REST API)"
            )
        if outbound is None or not outbound.can_request:
            raise StreamRequiredError(f"{what} needs a streamed (SSE) response, which this request does not have")
        within = self.deadline.remaining() if self.deadline is not None else ASK_TIMEOUT_SECONDS
        return await outbound.request(method, params, within=min(within, ASK_TIMEOUT_SECONDS))


_NO_HEADERS: Mapping[str, str] = MappingProxyType({})

CLIENT_REQUESTS = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}
"""The requests a server may send its client, and the client capability each needs."""

ASK_TIMEOUT_SECONDS = 300.0
"""The longest a call waits for the client to answer a request it sent mid-call (the deadline may cut it)."""

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
