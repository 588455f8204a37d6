"""Method name -> its implementation over an `McpServer`, for both protocol eras: the innermost step before user code.

The methods live with what they serve: `lifecycle` (discover, initialize, ping, log level, subscriptions),
`listing` (the four lists), `tool_calls`, `reads` (resources, prompts, completions), `subscriptions`
(`subscriptions/listen`) and `tasks` (built on first use, so servers without tasks never import it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Generic, TypeVar

from stratus.errors import McpError, MethodNotFoundError
from stratus.protocol import request_spans, versions
from stratus.protocol.call import Call, Method
from stratus.protocol.cancellation import RunningCalls
from stratus.protocol.lifecycle import Lifecycle
from stratus.protocol.listing import Listings
from stratus.protocol.reads import Reads
from stratus.protocol.tool_calls import ToolCalls
from stratus.request.inputs import InputRequired
from stratus.server.hooks import ServerHooks
from stratus.server.server import McpServer
from stratus.stores.base import Stores
from stratus.tracing import NO_SPAN, NO_TRACING, RequestSpan, Tracing
from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.protocol.task_service import TaskService


T = TypeVar("T")


class BuiltOnUse(Generic[T]):
    """`build()`'s result, made on the first call and kept: a part built the first time it is used, so that what a
    server never uses is never imported (the task service, the relayed calls)."""

    __slots__ = ("_build", "_part")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._part: T | None = None

    def __call__(self) -> T:
        if self._part is None:
            self._part = self._build()
        return self._part

    @property
    def built(self) -> T | None:
        """The part, if it was used; None otherwise (nothing is built to answer)."""
        return self._part


class Dispatcher:
    """Routes one request of either era to the implementation of its method. Its parts are built by the composition
    root (`stratus.composition.build_serving`); the dispatcher only holds each era's table of methods."""

    def __init__(
        self,
        server: McpServer,
        stores: Stores,
        *,
        hooks: ServerHooks,
        lifecycle: Lifecycle,
        listings: Listings,
        tool_calls: ToolCalls,
        reads: Reads,
        listen: Method,
        tasks: BuiltOnUse[TaskService],
        running: RunningCalls,
        tracing: Tracing = NO_TRACING,
    ) -> None:
        self.server = server
        self.tracing = tracing
        # Tracing off: no span, not even its attributes worked out, nor a frame more per request.
        self.dispatch: Callable[[Call], Awaitable[JsonObject]] = (
            self._dispatch if tracing is NO_TRACING else self._traced
        )
        """The result of a call (in its server span when tracing is on).

        Raises:
            McpError: the request failed in a way the protocol reports as a JSON-RPC error.
        """
        self.stores = stores
        self.hooks = hooks
        self.lifecycle = lifecycle
        self.running = running
        self.tasks = tasks
        """The task service, built on first use so that servers without tasks never import it."""
        shared: dict[str, Method] = {
            "tools/list": listings.tools,
            "tools/call": tool_calls.call,
            "resources/list": listings.resources,
            "resources/templates/list": listings.templates,
            "resources/read": reads.resource,
            "prompts/list": listings.prompts,
            "prompts/get": reads.prompt,
            "completion/complete": reads.complete,
        }
        self._modern: dict[str, Method] = {
            **shared,
            "server/discover": lifecycle.discover,
            "subscriptions/listen": listen,
            "tasks/get": lambda call: tasks().get(call),
            "tasks/update": lambda call: tasks().update(call),
            "tasks/cancel": lambda call: tasks().cancel(call),
        }
        self._handshake: dict[str, Method] = {
            **shared,
            "ping": lifecycle.ping,
            "logging/setLevel": lifecycle.set_level,
            "resources/subscribe": lifecycle.subscribe,
            "resources/unsubscribe": lifecycle.unsubscribe,
            "tasks/get": lambda call: tasks().get(call),
            "tasks/result": lambda call: tasks().result(call),
            "tasks/cancel": lambda call: tasks().cancel(call),
        }

    async def aclose(self) -> None:
        """Stop what the dispatcher runs in the background (the tasks' cancellation watch), at shutdown."""
        if (tasks := self.tasks.built) is not None:
            await tasks.aclose()

    def span(self, call: Call) -> AbstractContextManager[RequestSpan]:
        """The request's server span (`stratus.protocol.request_spans`), linked to the span that opened its session;
        also for a request answered without `dispatch` (`initialize`, a call relayed to the task worker)."""
        if self.tracing is NO_TRACING:
            return NO_SPAN
        name, attributes = request_spans.span_name(call), request_spans.span_attributes(call)
        parent, transport = request_spans.parent_context(call), request_spans.transport_context(call)
        opened_by = call.session.opened_by if call.session is not None else None
        return self.tracing.request(name, attributes, parent, transport, opened_by)

    async def _traced(self, call: Call) -> JsonObject:
        """`_dispatch` in the request's server span."""
        with self.span(call) as span:
            try:
                result = await self._dispatch(call)
            except McpError as error:
                span.failed(str(error.code), error.message, status_code=str(error.code))
                raise
            except InputRequired:  # a question to the client, or a task's run ending between steps: no failure
                raise
            except Exception as error:
                span.failed(type(error).__name__)  # its text stays out, as it does of the client's answer
                raise
            if result.get("isError") is True and call.request.method == "tools/call":
                span.failed("tool_error")
            return result

    async def _dispatch(self, call: Call) -> JsonObject:
        """The result of `call`.

        Raises:
            McpError: the request failed in a way the protocol reports as a JSON-RPC error.
        """
        table = self._modern if call.stateless else self._handshake
        method = table.get(call.request.method)
        if self.server.dynamic and method is not None:
            await self.hooks.refresh(self.stores, call.request.method, call.params)
        if method is None:
            raise MethodNotFoundError(
                f"Method not found: {call.request.method}", http_status=404 if call.stateless else None
            )
        result = await method(call)
        if call.stateless:
            result.setdefault("resultType", "complete")
            meta = result.setdefault("_meta", {})
            meta[versions.SERVER_INFO_META] = self.server.info
        return result

    def initialize_result(self, version: str) -> JsonObject:
        return self.lifecycle.initialize_result(version)

    async def answer_task(self, principal_key: str | None, task_id: str, key: str, reply: JsonObject) -> bool:
        """Keep a client's reply to its task's question (`TaskService.answer`); whether a task waited for it."""
        return await self.tasks().answer(principal_key, task_id, key, reply)

    async def cancel(self, session_id: str | None, request_id: object, reason: str | None) -> None:
        """Cancel a running call of this session, wherever it runs (best effort)."""
        await self.running.cancel(session_id, request_id, reason)
