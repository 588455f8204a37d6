"""`tools/call`: validated, run now through the pipeline or handed to the task service, with its cancellation and
multi round-trip input handled."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from stratus.errors import InvalidParamsError
from stratus.pipeline.pipeline import Pipeline
from stratus.protocol import versions
from stratus.protocol.call import Call
from stratus.protocol.cancellation import RunningCalls
from stratus.protocol.rounds import InputRounds
from stratus.request.inputs import InputRequired, OutOfTime
from stratus.server.principal import Principal
from stratus.server.server import McpServer
from stratus.server.signature import ArgumentsError
from stratus.server.tools import Tool, error_result
from stratus.stores.records import CallAdmission, CallChecks
from stratus.types import JsonObject, Publish

if TYPE_CHECKING:
    from stratus.protocol.task_service import TaskService


class ToolCalls:
    def __init__(
        self,
        server: McpServer,
        pipeline: Pipeline,
        rounds: InputRounds,
        running: RunningCalls,
        publish: Publish,
        tasks: Callable[[], TaskService],
    ) -> None:
        self.server = server
        self.pipeline = pipeline
        self.rounds = rounds
        self.running = running
        self.publish = publish
        self._tasks = tasks

    def prefetch_checks(self, params: JsonObject, principal: Principal | None, session_id: str) -> CallChecks | None:
        """What a tools/call with `params` would ask the store, to ask it together with loading its handshake-era
        session; None when the session is loaded alone (`Pipeline.prefetch_checks` says when)."""
        name = params.get("name")
        tool = self.server.tools.get(name) if isinstance(name, str) else None
        return None if tool is None else self.pipeline.prefetch_checks(tool, principal, session_id)

    async def admit_with_session(self, checks: CallChecks) -> CallAdmission:
        """The store's answer to `prefetch_checks`, the session with it (`Pipeline.admit_with_session`)."""
        return await self.pipeline.admit_with_session(checks)

    async def call(self, call: Call) -> JsonObject:
        name = call.string_param("name")
        tool = self.server.tools.get(name)
        if tool is None:
            raise InvalidParamsError(f"Unknown tool: {name}", data={"name": name})
        arguments = call.object_param("arguments")
        if self.tasks_wanted(call, tool):
            try:
                tool.validate(arguments)
            except ArgumentsError as exc:
                return self._bad_arguments(call, name, exc)
            return await self._tasks().create(call, tool, arguments)
        return await self.run(call, tool, arguments)

    def tasks_wanted(self, call: Call, tool: Tool) -> bool:
        """Whether this call runs as a task (see TaskService.wanted); no task machinery for tools without tasks
        or requests that do not ask."""
        if tool.task_support is None and not isinstance(call.params.get("task"), dict):
            return False
        return self._tasks().wanted(call, tool)

    async def run(self, call: Call, tool: Tool, arguments: JsonObject) -> JsonObject:
        """Run the tool now, through the pipeline, and answer with its result."""
        inputs = self.rounds.first(call) if "requestState" not in call.params else await self.rounds.open(call)
        deadline = self.pipeline.deadline_for(call.http, tool.policy.timeout)
        context = call.context(
            item=tool.name, deadline=deadline, inputs=inputs, publish=self.publish, metrics=self.pipeline.metrics
        )
        watcher = self.running.start(call.request.id, context)
        try:
            return await self.pipeline.call_tool(tool, arguments, context, call.admitted)
        except OutOfTime:
            raise  # a task's run ends between two steps; its worker goes on with it (TaskService.run)
        except InputRequired:
            return self.rounds.required(call, inputs)
        except ArgumentsError as exc:
            return self._bad_arguments(call, tool.name, exc)
        finally:
            self.running.stop(call.request.id, context, watcher)

    @staticmethod
    def _bad_arguments(call: Call, name: str, exc: ArgumentsError) -> JsonObject:
        message = f"Invalid arguments for tool '{name}': " + "; ".join(exc.problems)
        if versions.at_least(call.version, versions.INPUT_ERRORS_AS_RESULTS_SINCE):
            return error_result(message)
        raise InvalidParamsError(message, data={"problems": exc.problems}) from None
