"""Handshake-era calls that may ask their client something mid-call, through a buffered front door: run in another
invocation, their stream relayed through the store.

API Gateway's HTTP API sends an answer whole, once it ends. A call waiting there for its client's answer to an
elicitation, sampling or roots request would wait for an answer the client cannot give before it has the question.
So such a call is stored (`stratus.stores.task_records.RelayedCall`) and started in the task worker (an asynchronous
invocation, `stratus.protocol.launchers.CallLauncher`), and runs
there with a stream log of its own (`StreamLog`): what it sends, its questions and at last its response are appended
to it, and its client's replies reach it through the pending-request store (a POST landing on any container). The
buffered answer relays the log until the call asks something or ends (`stratus.transport.session_stream`), and the
client polls the rest with GET and `Last-Event-ID`, as it resumes any call's stream.

Asynchronous invocation may deliver an event more than once ("How Lambda handles errors and retries with
asynchronous invocation", https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html): a run
first moves its record from `working` to `running`, and a delivery that finds it moved does nothing.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, NamedTuple

from stratus.errors import InvalidParamsError, McpError
from stratus.protocol import versions
from stratus.protocol.call import Call
from stratus.protocol.jsonrpc import Request, error_response, result_response
from stratus.protocol.kept_principal import kept_principal, principal_from
from stratus.request.http import HttpRequest
from stratus.request.outbound import Outbound, SessionReplies, StreamLog
from stratus.stores.records import TaskRecord
from stratus.stores.task_records import RelayedCall
from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.protocol.launchers import CallLauncher
    from stratus.protocol.task_service import RunTool
    from stratus.server.server import McpServer
    from stratus.server.tools import Tool
    from stratus.stores.base import Stores

ASKING_CAPABILITIES = ("elicitation", "sampling", "roots")
"""What a client must declare for a call to ask it something mid-call."""
RUN_MARGIN_SECONDS = 60.0
"""How long a relayed call's record outlives its tool's timeout (or the worker's 15 minutes)."""
WORKER_SECONDS = 900.0


class RelayedStream(NamedTuple):
    """Where a relayed call's stream is kept: its session's log under `<session>/<token>`."""

    key: str
    token: str


class RelayedOutbound(Outbound):
    """A relayed call's messages to its client, appended to its stream log only: the buffered answer and the
    client's polls read them there, on whichever container they land."""

    async def _put(self, message: JsonObject) -> None:
        assert self.log is not None, "a relayed call always has its stream log"
        self.sent += 1
        await self.log.record(message)


def may_ask(call: Call, tool: Tool) -> bool:
    """Whether the call could ask its client something mid-call: a tool that takes a `Context`, in a session whose
    client declared a capability to be asked and resumes streams (2025-11-25 on). A call whose arguments are no object
    is answered at once with its error, as any."""
    return (
        tool.signature.context_parameter is not None
        and isinstance(call.params.get("arguments", {}), dict | None)
        and versions.at_least(call.version, versions.PRIMING_SINCE)
        and any(capability in call.client_capabilities for capability in ASKING_CAPABILITIES)
    )


class RelayedCalls:
    """Starts calls in another invocation and runs them there."""

    def __init__(
        self, server: McpServer, stores: Stores, run_tool: RunTool, launcher: CallLauncher | None = None
    ) -> None:
        self.server = server
        """The served server, whose tools (a gateway's are rebuilt as its upstreams change) run the calls."""
        self.stores = stores
        self.run_tool = run_tool
        self.launcher = launcher

    def candidate(self, params: JsonObject) -> Tool | None:
        """The tool of a tools/call with `params`, if such a call might be relayed: a tool that takes a `Context`
        (without one it cannot ask), called plainly (a task runs elsewhere already)."""
        name = params.get("name")
        tool = self.server.tools.get(name) if isinstance(name, str) else None
        if tool is None or tool.signature.context_parameter is None:
            return None
        if tool.task_support == "required" or isinstance(params.get("task"), dict):
            return None
        return tool

    async def start(self, call: Call, tool: Tool) -> RelayedStream:
        """Store the call with a stream log of its own, and start its run elsewhere; where its stream is kept."""
        assert call.session is not None, "only a session's calls are relayed"
        session_id = call.session.session_id
        log = StreamLog(self.stores.events, session_id, priming=True)
        await log.open()  # a poll that comes before the call has sent anything finds the stream
        meta = call.params.get("_meta")
        request = RelayedCall(
            tool=call.string_param("name"),  # as the client named it: the name `run` finds the tool by
            arguments=call.object_param("arguments"),
            request_id=call.request.id,
            session_id=session_id,
            stream_token=log.token,
            principal=kept_principal(call.principal),
            meta=meta if isinstance(meta, dict) else None,
        )
        call_id = f"call-{secrets.token_urlsafe(18)}"
        ttl = (tool.policy.timeout or WORKER_SECONDS) + RUN_MARGIN_SECONDS
        owner = call.principal.key if call.principal else None
        record = TaskRecord(task_id=call_id, principal=owner, status="working", request=request)
        assert self.launcher is not None, "only a dispatcher with a launcher starts relayed calls"
        await self.stores.tasks.create(record, ttl_seconds=ttl)
        await self.launcher.launch_call(call_id)
        return RelayedStream(log.key, log.token)

    async def run(self, call_id: str, *, lambda_context: Any = None) -> bool:
        """Run a stored call once, its messages and response appended to its stream log; whether it ran."""
        from stratus.protocol.worker_events import own_record

        record = await own_record(self.stores.tasks, call_id, RelayedCall)
        if (
            record is None
            or not isinstance(record.request, RelayedCall)
            or not await self.stores.tasks.update(call_id, status="running", outcome=None, expect=("working",))
        ):
            return False  # unknown, expired, no call, or delivered again: another run has it
        request = record.request
        session = await self.stores.sessions.load(request.session_id)
        outbound = RelayedOutbound(SessionReplies(self.stores.pending, request.session_id))
        outbound.log = StreamLog(self.stores.events, request.session_id, priming=True, token=request.stream_token)
        params: JsonObject = {"name": request.tool, "arguments": request.arguments}
        if request.meta is not None:
            params["_meta"] = request.meta
        message = Request(id=request.request_id, method="tools/call", params=params)
        if session is None:  # ended meanwhile: its client is gone, and nothing may run on its behalf
            await outbound.record_final(error_response(message.id, McpError("The session ended before the call ran")))
            return True
        call = Call.in_session(
            message,
            session,
            HttpRequest("POST", "", {}, lambda_context=lambda_context, outbound=outbound),
            principal_from(request.principal),
        )
        try:
            tool = self.server.tools.get(request.tool)
            if tool is None:
                raise InvalidParamsError(f"Unknown tool: {request.tool}")
            response = result_response(message.id, await self.run_tool(call, tool, request.arguments))
        except McpError as error:
            response = error_response(message.id, error)
        await outbound.record_final(response)
        await self.stores.tasks.update(call_id, status="completed", outcome=None, expect=("running",))
        return True
