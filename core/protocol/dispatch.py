"""Method name -> handler over an `McpServer`, for both protocol eras. The innermost step before user code."""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from core.errors import (
    INVALID_PARAMS,
    InternalError,
    InvalidParamsError,
    McpError,
    MethodNotFoundError,
    StoreUnavailableError,
)
from core.pipeline.pipeline import Pipeline
from core.protocol import versions
from core.protocol.capabilities import server_capabilities
from core.protocol.jsonrpc import Request, RequestId
from core.protocol.notices import NoticeBoard
from core.protocol.request_state import STATE_TTL_SECONDS, RequestStateError, StateSealer, request_digest
from core.protocol.subscriptions import listen
from core.resilience.deadline import Deadline
from core.server.context import CancellationSignal, Context, HttpRequest
from core.server.inputs import InputRequired, InputRound
from core.server.pagination import Paginator
from core.server.principal import Principal
from core.server.resources import Resource, ResourceTemplate
from core.server.server import McpServer
from core.server.signature import ArgumentsError
from core.server.tools import Tool, error_result
from core.stores.base import CallAdmission, SessionRecord, SessionStore

if TYPE_CHECKING:
    from core.protocol.tasks import TaskLauncher, TaskService

JsonObject = dict[str, Any]
T = TypeVar("T")
logger = logging.getLogger("stratus.dispatch")

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LEGACY_RESOURCE_NOT_FOUND = -32002
LIST_TTL_MS = 300_000
CANCEL_WATCH_AFTER = 1.0
"""Seconds a session's call runs before it also listens for a cancellation sent to another process."""
CANCEL_WATCH_LIMIT = 900.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One request, with what its era says about the client."""

    request: Request
    version: str
    client_capabilities: JsonObject = field(default_factory=dict)
    client_info: JsonObject | None = None
    session: SessionRecord | None = None
    http: HttpRequest | None = None
    principal: Principal | None = None
    admitted: CallAdmission | None = None
    """The store's answers for a tools/call, when the transport fetched them with the session."""

    @property
    def modern(self) -> bool:
        return versions.is_modern(self.version)

    @property
    def params(self) -> JsonObject:
        return self.request.params

    def context(
        self,
        *,
        item: str | None = None,
        deadline: Deadline | None = None,
        inputs: InputRound | None = None,
        publish: Callable[[str, JsonObject], Awaitable[None]] | None = None,
    ) -> Context:
        meta = self.params.get("_meta")
        return Context(
            request_id=self.request.id,
            method=self.request.method,
            protocol_version=self.version,
            session_id=self.session.session_id if self.session else None,
            client_capabilities=self.client_capabilities,
            client_info=self.client_info,
            meta=meta if isinstance(meta, dict) else {},
            request=self.http,
            # At 2026-07-28 a closed stream is the cancellation; before, a client may drop and resume its stream.
            signal=self.http.disconnected.child()
            if self.modern and self.http and self.http.disconnected
            else CancellationSignal(),
            user=self.principal,
            item=item,
            deadline=deadline,
            inputs=inputs,
            publish=publish,
            log_level=self._log_level(meta),
            log_opted_in=not self.modern or (isinstance(meta, dict) and versions.LOG_LEVEL_META in meta),
        )

    def _log_level(self, meta: object) -> str | None:
        if self.modern:
            level = meta.get(versions.LOG_LEVEL_META) if isinstance(meta, dict) else None
            return level if isinstance(level, str) else None
        return self.session.log_level if self.session else None


Handler = Callable[[Call], Awaitable[JsonObject]]


class ResourceNotFoundError(McpError):
    """No resource or template produces the requested URI: -32602 at 2026-07-28, -32002 in the legacy era."""

    def __init__(self, uri: str, *, modern: bool) -> None:
        super().__init__(f"Resource not found: {uri}", data={"uri": uri})
        self.code = INVALID_PARAMS if modern else LEGACY_RESOURCE_NOT_FOUND


class Dispatcher:
    """Routes one request of either era to the server's tools, resources and prompts."""

    def __init__(
        self,
        server: McpServer,
        sessions: SessionStore,
        paginator: Paginator,
        pipeline: Pipeline,
        sealer: StateSealer,
        *,
        max_stream_seconds: float = 840.0,
        task_launcher: TaskLauncher | None = None,
    ) -> None:
        self.server = server
        self.sealer = sealer
        self.sessions = sessions
        self.paginator = paginator
        self.pipeline = pipeline
        self.notices = NoticeBoard(pipeline.stores.events)
        self.max_stream_seconds = max_stream_seconds
        self.task_launcher = task_launcher
        self._tasks: TaskService | None = None
        # Cancellation signals of the calls running in this process, by (session id, request id). A legacy
        # notifications/cancelled reaches them when it lands on the same process; across containers it needs the
        # store's event channel (streaming).
        self._running: dict[tuple[str | None, RequestId], CancellationSignal] = {}
        shared: dict[str, Handler] = {
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._read_resource,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
        }
        self._modern: dict[str, Handler] = {
            **shared,
            "server/discover": self._discover,
            "subscriptions/listen": self._listen,
            "tasks/get": lambda call: self.tasks.get(call),
            "tasks/update": lambda call: self.tasks.update(call),
            "tasks/cancel": lambda call: self.tasks.cancel(call),
        }
        self._legacy: dict[str, Handler] = {
            **shared,
            "ping": self._ping,
            "logging/setLevel": self._set_level,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "tasks/get": lambda call: self.tasks.get(call),
            "tasks/result": lambda call: self.tasks.result(call),
            "tasks/cancel": lambda call: self.tasks.cancel(call),
        }

    @property
    def tasks(self) -> TaskService:
        """The task service, built on first use so that servers without tasks never import it."""
        if self._tasks is None:
            from core.protocol.tasks import TaskService

            self._tasks = TaskService(
                self.server.tools,
                self.pipeline.stores,
                self._run_tool,
                lambda task_id: self.cancel(None, task_id, "the task was cancelled"),
                self.task_launcher,
            )
        return self._tasks

    async def dispatch(self, call: Call) -> JsonObject:
        """The result of `call`.

        Raises:
            McpError: the request failed in a way the protocol reports as a JSON-RPC error.
        """
        table = self._modern if call.modern else self._legacy
        handler = table.get(call.request.method)
        if self.server.dynamic and handler is not None:
            await self.server.refresh(self.pipeline.stores, call.request.method, call.params)
        if handler is None:
            raise MethodNotFoundError(
                f"Method not found: {call.request.method}", http_status=404 if call.modern else None
            )
        result = await handler(call)
        if call.modern:
            result.setdefault("resultType", "complete")
            meta = result.setdefault("_meta", {})
            meta[versions.SERVER_INFO_META] = self.server.info
        return result

    # -- lifecycle -------------------------------------------------------------------------------------------

    def capabilities(self, *, modern: bool, version: str | None = None) -> JsonObject:
        return server_capabilities(self.server, modern=modern, version=version)

    async def _discover(self, call: Call) -> JsonObject:
        result: JsonObject = {
            "supportedVersions": list(versions.SUPPORTED_VERSIONS),
            "capabilities": self.capabilities(modern=True),
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "public",
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    async def _listen(self, call: Call) -> JsonObject:
        return await listen(
            call.request.id,
            call.params,
            call.http,
            self.server,
            self.pipeline.stores.events,
            max_seconds=self.max_stream_seconds,
        )

    def initialize_result(self, version: str) -> JsonObject:
        result: JsonObject = {
            "protocolVersion": version,
            "capabilities": self.capabilities(modern=False, version=version),
            "serverInfo": self.server.info,
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    async def _ping(self, call: Call) -> JsonObject:
        return {}

    async def _set_level(self, call: Call) -> JsonObject:
        level = call.params.get("level")
        if level not in LOG_LEVELS:
            raise InvalidParamsError(f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}")
        session = _require_session(call)
        session.log_level = level
        await self.sessions.save(session)
        return {}

    async def _subscribe(self, call: Call) -> JsonObject:
        uri = _string_param(call, "uri")
        session = _require_session(call)
        if uri not in session.subscriptions:
            session.subscriptions.append(uri)
            await self.sessions.save(session)
        return {}

    async def _unsubscribe(self, call: Call) -> JsonObject:
        uri = _string_param(call, "uri")
        session = _require_session(call)
        if uri in session.subscriptions:
            session.subscriptions.remove(uri)
            await self.sessions.save(session)
        return {}

    # -- lists -----------------------------------------------------------------------------------------------

    def _page(self, call: Call, kind: str, items: list[JsonObject]) -> JsonObject:
        page, next_cursor = self.paginator.page(kind, items, call.params.get("cursor"))
        result: JsonObject = {kind: list(page)}
        if next_cursor:
            result["nextCursor"] = next_cursor
        if call.modern:
            result["ttlMs"] = LIST_TTL_MS
            result["cacheScope"] = "public"
        return result

    async def _list_tools(self, call: Call) -> JsonObject:
        with_execution = not call.modern and versions.at_least(call.version, versions.TASKS_SINCE)
        definitions = [
            {**tool.definition(), "execution": {"taskSupport": tool.task_support}}
            if with_execution and tool.task_support
            else tool.definition()
            for tool in self.server.tools.values()
        ]
        return self._page(call, "tools", definitions)

    async def _list_resources(self, call: Call) -> JsonObject:
        return self._page(call, "resources", [item.definition for item in self.server.resources.values()])

    async def _list_templates(self, call: Call) -> JsonObject:
        return self._page(call, "resourceTemplates", [item.definition for item in self.server.templates.values()])

    async def _list_prompts(self, call: Call) -> JsonObject:
        return self._page(call, "prompts", [prompt.definition for prompt in self.server.prompts.values()])

    # -- calls -----------------------------------------------------------------------------------------------

    async def _call_tool(self, call: Call) -> JsonObject:
        name = _string_param(call, "name")
        tool = self.server.tools.get(name)
        if tool is None:
            raise InvalidParamsError(f"Unknown tool: {name}", data={"name": name})
        arguments = _object_param(call, "arguments")
        if self.tasks_wanted(call, tool):
            try:
                tool.validate(arguments)
            except ArgumentsError as exc:
                return self._bad_arguments(call, name, exc)
            return await self.tasks.create(call, tool, arguments)
        return await self._run_tool(call, tool, arguments)

    def tasks_wanted(self, call: Call, tool: Tool) -> bool:
        """Whether this call runs as a task (see TaskService.wanted); no task machinery for tools without tasks
        or requests that do not ask."""
        if tool.task_support is None and not isinstance(call.params.get("task"), dict):
            return False
        return self.tasks.wanted(call, tool)

    async def _run_tool(self, call: Call, tool: Tool, arguments: JsonObject) -> JsonObject:
        """Run the tool now, through the pipeline, and answer with its result."""
        name = tool.name
        inputs = await self._input_round(call)
        deadline = self.pipeline.deadline_for(call.http, tool.policy.timeout)
        context = call.context(item=name, deadline=deadline, inputs=inputs, publish=self.notices.publish)
        running = (context.session_id, call.request.id)
        self._running[running] = context.signal
        # A session's call also listens for a cancellation sent to another process (see _watch_cancel).
        watcher = asyncio.ensure_future(self._watch_cancel(call, context)) if context.session_id else None
        try:
            return await self.pipeline.call_tool(tool, arguments, context, call.admitted)
        except InputRequired:
            return self._input_required(call, inputs)
        except ArgumentsError as exc:
            return self._bad_arguments(call, name, exc)
        finally:
            self._running.pop(running, None)
            if watcher is not None:
                watcher.cancel()

    @staticmethod
    def _bad_arguments(call: Call, name: str, exc: ArgumentsError) -> JsonObject:
        message = f"Invalid arguments for tool '{name}': " + "; ".join(exc.problems)
        if versions.at_least(call.version, versions.INPUT_ERRORS_AS_RESULTS_SINCE):
            return error_result(message)
        raise InvalidParamsError(message, data={"problems": exc.problems}) from None

    async def _read_resource(self, call: Call) -> JsonObject:
        uri = _string_param(call, "uri")
        target, variables = self._resource_for(uri)
        if target is None:
            raise ResourceNotFoundError(uri, modern=call.modern)

        async def read(context: Context) -> list[JsonObject]:
            if isinstance(target, ResourceTemplate):
                return await _user_code(f"Resource '{uri}'", target.read(uri, variables or {}, context))
            return await _user_code(f"Resource '{uri}'", target.read(context))

        inputs = await self._input_round(call)
        try:
            context = call.context(
                item=target.uri_template if isinstance(target, ResourceTemplate) else target.uri,
                deadline=self.pipeline.deadline_for(call.http, None),
                inputs=inputs,
                publish=self.notices.publish,
            )
            contents = await self.pipeline.read(context, "resources/read", target.access, read)
        except InputRequired:
            return self._input_required(call, inputs)
        except ArgumentsError as exc:
            raise InvalidParamsError(f"Invalid URI {uri}: " + "; ".join(exc.problems)) from None
        result: JsonObject = {"contents": contents}
        if call.modern:
            result["ttlMs"] = 0
            result["cacheScope"] = "private"
        return result

    async def _input_round(self, call: Call) -> InputRound | None:
        """At 2026-07-28, the answers this attempt carries: earlier rounds' from its sealed requestState (claimed
        once, so a state cannot be replayed), this round's from inputResponses. None on the legacy wire."""
        if not call.modern:
            return None
        answers: dict[str, Any] = {}
        state = call.params.get("requestState")
        if state is not None:
            principal = call.principal.key if call.principal else None
            digest = request_digest(call.request.method, call.params)
            answers, nonce = self.sealer.open(state, principal=principal, digest=digest)
            if not await self.pipeline.stores.cache.claim(f"mrtr:{nonce}", STATE_TTL_SECONDS):
                raise RequestStateError
        responses = call.params.get("inputResponses")
        if isinstance(responses, dict):
            answers.update(responses)
        return InputRound(answers)

    def _input_required(self, call: Call, inputs: InputRound | None) -> JsonObject:
        """The `input_required` result: this round's questions and every answer so far, sealed."""
        assert inputs is not None
        principal = call.principal.key if call.principal else None
        digest = request_digest(call.request.method, call.params)
        state, _ = self.sealer.seal(
            {key: value for key, value in inputs.answers.items() if isinstance(value, dict)},
            principal=principal,
            digest=digest,
        )
        return {"resultType": "input_required", "inputRequests": inputs.asked, "requestState": state}

    async def _watch_cancel(self, call: Call, context: Context) -> None:
        """Once a session's call has run `CANCEL_WATCH_AFTER` seconds, wait for a cancellation sent to another
        process (a buffered Lambda container always receives it elsewhere) through the pending-request store,
        so short calls cost the store nothing."""
        await asyncio.sleep(CANCEL_WATCH_AFTER)
        pending = self.pipeline.stores.pending
        within = min(context.deadline.remaining(), CANCEL_WATCH_LIMIT) if context.deadline else CANCEL_WATCH_LIMIT
        box = f"{context.session_id}/cancel/{call.request.id}"
        try:
            await pending.open(box, ttl_seconds=within + 5)
            reason = await pending.wait(box, within=within)
        except StoreUnavailableError:
            return  # cancellation is best effort; the call is not disturbed by the store's outage
        if reason is not None:
            context.signal.cancel(reason or "cancelled by the client")

    async def cancel(self, session_id: str | None, request_id: object, reason: str | None) -> None:
        """Cancel a call of this session: here if it runs here, else through the store for the process running
        it (unknown, finished or too-young calls are ignored: cancellation is best effort)."""
        if not isinstance(request_id, str | int):
            return
        signal = self._running.get((session_id, request_id))
        if signal is not None:
            signal.cancel(reason or "cancelled by the client")
        elif session_id is not None:
            await self.pipeline.stores.pending.deliver(f"{session_id}/cancel/{request_id}", reason or "")

    def _resource_for(self, uri: str) -> tuple[Resource | ResourceTemplate | None, dict[str, str] | None]:
        """The static resource with this URI, else the first template that produces it (with its variables)."""
        resource = self.server.resources.get(uri)
        if resource is not None:
            return resource, None
        for template in self.server.templates.values():
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None, None

    async def _get_prompt(self, call: Call) -> JsonObject:
        name = _string_param(call, "name")
        prompt = self.server.prompts.get(name)
        if prompt is None:
            raise InvalidParamsError(f"Unknown prompt: {name}", data={"name": name})
        arguments = _object_param(call, "arguments")

        async def render(context: Context) -> JsonObject:
            return await _user_code(f"Prompt '{name}'", prompt.get(arguments, context))

        inputs = await self._input_round(call)
        try:
            context = call.context(
                item=name,
                deadline=self.pipeline.deadline_for(call.http, None),
                inputs=inputs,
                publish=self.notices.publish,
            )
            result: JsonObject = await self.pipeline.read(context, "prompts/get", prompt.access, render)
        except InputRequired:
            return self._input_required(call, inputs)
        except ArgumentsError as exc:
            raise InvalidParamsError(
                f"Invalid arguments for prompt '{name}': " + "; ".join(exc.problems), data={"problems": exc.problems}
            ) from None
        return result

    async def _complete(self, call: Call) -> JsonObject:
        ref = _object_param(call, "ref")
        argument = _object_param(call, "argument")
        ref_type = ref.get("type")
        ref_name = ref.get("name") if ref_type == "ref/prompt" else ref.get("uri")
        argument_name, value = argument.get("name"), argument.get("value", "")
        if ref_type not in ("ref/prompt", "ref/resource") or not isinstance(ref_name, str):
            raise InvalidParamsError(
                "Invalid params: ref must be a ref/prompt with a name or a ref/resource with a uri"
            )
        if not isinstance(argument_name, str) or not isinstance(value, str):
            raise InvalidParamsError("Invalid params: argument needs a string name and value")
        known = self.server.prompts if ref_type == "ref/prompt" else self.server.templates
        if ref_name not in known:
            raise InvalidParamsError(f"Unknown {ref_type.removeprefix('ref/')}: {ref_name}")
        context_arguments = _object_param(call, "context").get("arguments") or {}
        completion = await _user_code(
            "Completion", self.server.complete(ref_type, ref_name, argument_name, value, dict(context_arguments))
        )
        return {"completion": completion}


async def _user_code(what: str, step: Awaitable[T]) -> T:
    """Await a handler's work; an unexpected exception becomes a -32603 with a reference, its text only logged."""
    try:
        return await step
    except (McpError, ArgumentsError, InputRequired):
        raise
    except Exception:
        reference = secrets.token_hex(6)
        logger.exception("handler raised", extra={"handler": what, "error_ref": reference})
        raise InternalError(f"{what} failed with an internal error (reference {reference})", http_status=200) from None


def _string_param(call: Call, name: str) -> str:
    value = call.params.get(name)
    if not isinstance(value, str):
        raise InvalidParamsError(f"Invalid params: {name} must be a string")
    return value


def _object_param(call: Call, name: str) -> JsonObject:
    value = call.params.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidParamsError(f"Invalid params: {name} must be an object")
    return value


def _require_session(call: Call) -> SessionRecord:
    if call.session is None:  # the transport guarantees a session for legacy calls past initialize
        raise InvalidParamsError("This method needs a session")
    return call.session
