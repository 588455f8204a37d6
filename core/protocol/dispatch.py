"""Method name -> its implementation over an `McpServer`, for both protocol eras: the innermost step before user code.

The methods live with what they serve: `lifecycle` (discover, initialize, ping, log level, subscriptions),
`listing` (the four lists), `tool_calls`, `reads` (resources, prompts, completions), `subscriptions`
(`subscriptions/listen`) and `tasks` (built on first use, so servers without tasks never import it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stratus.errors import MethodNotFoundError
from stratus.pipeline.pipeline import Pipeline
from stratus.protocol import versions
from stratus.protocol.call import Call, Method
from stratus.protocol.cancellation import RunningCalls
from stratus.protocol.lifecycle import Lifecycle
from stratus.protocol.listing import Listings
from stratus.protocol.notifications import NotificationLog
from stratus.protocol.reads import Reads
from stratus.protocol.request_state import StateSealer
from stratus.protocol.rounds import InputRounds
from stratus.protocol.subscriptions import listen
from stratus.protocol.tool_calls import ToolCalls
from stratus.resilience.stream_slots import StreamSlots
from stratus.server.pagination import Paginator
from stratus.server.server import McpServer
from stratus.stores.base import Stores
from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.protocol.launchers import TaskLauncher
    from stratus.protocol.relayed_calls import RelayedCalls
    from stratus.protocol.task_service import TaskService


class Dispatcher:
    """Routes one request of either era to the implementation of its method."""

    def __init__(
        self,
        server: McpServer,
        stores: Stores,
        paginator: Paginator,
        pipeline: Pipeline,
        sealer: StateSealer,
        *,
        max_stream_seconds: float = 840.0,
        stream_slots: StreamSlots | None = None,
        task_launcher: TaskLauncher | None = None,
        max_tasks: int = 0,
        max_tasks_per_principal: int = 0,
    ) -> None:
        self.server = server
        self.stores = stores
        self.pipeline = pipeline
        self.max_stream_seconds = max_stream_seconds
        self.stream_slots = stream_slots or StreamSlots()
        """This process's open streams, counted against their caps (GET streams, `/events`, listens)."""
        self.task_launcher = task_launcher
        self.task_caps = (max_tasks, max_tasks_per_principal)
        """Running tasks in this process and live tasks per principal (0: no cap): `stratus.protocol.task_quota`."""
        self._tasks: TaskService | None = None
        self._relays: RelayedCalls | None = None
        self.running = RunningCalls(stores.pending)
        notices = NotificationLog(stores.events)
        rounds = InputRounds(sealer, stores.cache)
        reads = self.reads = Reads(server, pipeline, rounds, notices.publish)
        self.lifecycle = Lifecycle(server, stores.sessions, reads.check_readable)
        self.tool_calls = ToolCalls(server, pipeline, rounds, self.running, notices.publish, lambda: self.tasks)
        listings = Listings(server, paginator)
        shared: dict[str, Method] = {
            "tools/list": listings.tools,
            "tools/call": self.tool_calls.call,
            "resources/list": listings.resources,
            "resources/templates/list": listings.templates,
            "resources/read": reads.resource,
            "prompts/list": listings.prompts,
            "prompts/get": reads.prompt,
            "completion/complete": reads.complete,
        }
        self._modern: dict[str, Method] = {
            **shared,
            "server/discover": self.lifecycle.discover,
            "subscriptions/listen": self._listen,
            "tasks/get": lambda call: self.tasks.get(call),
            "tasks/update": lambda call: self.tasks.update(call),
            "tasks/cancel": lambda call: self.tasks.cancel(call),
        }
        self._handshake: dict[str, Method] = {
            **shared,
            "ping": self.lifecycle.ping,
            "logging/setLevel": self.lifecycle.set_level,
            "resources/subscribe": self.lifecycle.subscribe,
            "resources/unsubscribe": self.lifecycle.unsubscribe,
            "tasks/get": lambda call: self.tasks.get(call),
            "tasks/result": lambda call: self.tasks.result(call),
            "tasks/cancel": lambda call: self.tasks.cancel(call),
        }

    @property
    def tasks(self) -> TaskService:
        """The task service, built on first use so that servers without tasks never import it."""
        if self._tasks is None:
            from stratus.protocol.task_service import TaskService

            self._tasks = TaskService(
                self.server.tools,
                self.stores,
                self.tool_calls.run,
                lambda task_id: self.running.cancel(None, task_id, "the task was cancelled"),
                self.task_launcher,
                max_tasks=self.task_caps[0],
                max_tasks_per_principal=self.task_caps[1],
            )
        return self._tasks

    @property
    def relays(self) -> RelayedCalls | None:
        """Where calls that may ask their client mid-call run when a buffered front door answers them: the task
        worker, when the launcher can start a call there (None otherwise); built on first use."""
        if self._relays is None and self.task_launcher is not None:
            from stratus.protocol.launchers import CallLauncher

            if isinstance(self.task_launcher, CallLauncher):
                from stratus.protocol.relayed_calls import RelayedCalls

                self._relays = RelayedCalls(self.server.tools, self.stores, self.tool_calls.run, self.task_launcher)
        return self._relays

    async def aclose(self) -> None:
        """Stop what the dispatcher runs in the background (the tasks' cancellation watch), at shutdown."""
        if self._tasks is not None:
            await self._tasks.watch.aclose()

    async def dispatch(self, call: Call) -> JsonObject:
        """The result of `call`.

        Raises:
            McpError: the request failed in a way the protocol reports as a JSON-RPC error.
        """
        table = self._modern if call.stateless else self._handshake
        method = table.get(call.request.method)
        if self.server.dynamic and method is not None:
            await self.server.refresh(self.stores, call.request.method, call.params)
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

    async def cancel(self, session_id: str | None, request_id: object, reason: str | None) -> None:
        """Cancel a running call of this session, wherever it runs (best effort)."""
        await self.running.cancel(session_id, request_id, reason)

    async def _listen(self, call: Call) -> JsonObject:
        return await listen(
            call.request.id,
            call.params,
            call.http,
            self.server,
            self.stores.events,
            self.stream_slots,
            lambda uris: self.reads.readable(call, uris),
            principal=call.principal_key,
            max_seconds=self.max_stream_seconds,
        )
