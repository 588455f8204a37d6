"""Handshake-era calls that ask their client something mid-call on Lambda: suspended, not waiting.

A call that waits for its client's answer holds its invocation while the person thinks, and after the client has gone;
Lambda bills all of it. So on Lambda (a task worker to run calls in: `stratus.protocol.launchers.CallLauncher`) a
call that may ask runs with its questions answered from the store, as a 2026-07-28 multi round-trip retry or a task
is: the first unanswered question ends the run (`InputRequired`). The call is then stored suspended
(`stratus.stores.task_records.RelayedCall`, `input_required` with its questions), its questions go out on its stream
as requests whose ids name the call (`stratus.protocol.questions`), and the stream ends for the client to poll with
GET and `Last-Event-ID`, as it resumes any call's stream. The client's replies land on any container and are kept with
the call; the last one starts the call again in the task worker (an asynchronous invocation), where it runs from the
top with every answer so far, its kept steps (`ctx.step`) not run again and what it sent before not sent again, and
appends what it sends next, and at last its response, to the same stream. Nothing runs, or bills, while the person
thinks.

Through a streaming front door the call's first run is the request's own (`suspend`). Through a buffered one (API
Gateway's HTTP API sends an answer whole once it ends, so the client could not have a question before the answer)
every run is in the task worker (`start`), and the buffered answer relays the stream until the call asks or ends
(`stratus.transport.session_stream`).

Asynchronous invocation may deliver an event more than once ("How Lambda handles errors and retries with
asynchronous invocation", https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html): a run
first moves its record from `working` to `running`, and a delivery that finds it moved does nothing.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, NamedTuple

from stratus.errors import InvalidParamsError, McpError
from stratus.protocol import versions
from stratus.protocol.answers import KeptAnswers, reply_answer
from stratus.protocol.call import Call
from stratus.protocol.jsonrpc import Request, error_response, result_response
from stratus.protocol.kept_principal import kept_principal, principal_from
from stratus.protocol.questions import CALL, ask
from stratus.request.http import HttpRequest
from stratus.request.outbound import Outbound, StreamLog
from stratus.stores.records import SessionRecord, TaskRecord
from stratus.stores.task_records import RelayedCall, TaskOutcome
from stratus.tracing import current_trace_context
from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.protocol.launchers import CallLauncher
    from stratus.protocol.task_service import RunTool
    from stratus.server.server import McpServer
    from stratus.server.steps import StepJournal
    from stratus.server.tools import Tool
    from stratus.stores.base import Stores

ASKING_CAPABILITIES = ("elicitation", "sampling", "roots")
"""What a client must declare for a call to ask it something mid-call."""
RUN_MARGIN_SECONDS = 60.0
"""How long a relayed call's record outlives its tool's timeout (or the worker's 15 minutes)."""
WORKER_SECONDS = 900.0
ANSWER_SECONDS = 3600.0
"""How long a suspended call waits for its client's answers: its record lives this long past its run's time."""


class RelayedStream(NamedTuple):
    """Where a relayed call's stream is kept: its session's log under `<session>/<token>`."""

    key: str
    token: str


class RelayedOutbound(Outbound):
    """A relayed call's messages to its client, appended to its stream log only: the buffered answer and the
    client's polls read them there, on whichever container they land. The first `skip` were sent by an earlier run
    of the call (before a question): a run that replays them sends them again, so they are counted, not logged."""

    def __init__(self, skip: int = 0) -> None:
        super().__init__()
        self.skip = skip

    async def _put(self, message: JsonObject) -> None:
        assert self.log is not None, "a relayed call always has its stream log"
        self.sent += 1
        if self.sent > self.skip:
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
        log = StreamLog(self.stores.events, call.session.session_id, priming=True)
        await log.open()  # a poll that comes before the call has sent anything finds the stream
        call_id = new_call_id()
        record = TaskRecord(task_id=call_id, principal=call.principal_key, status="working", request=_kept(call, log))
        assert self.launcher is not None, "only a dispatcher with a launcher starts relayed calls"
        await self.stores.tasks.create(record, ttl_seconds=record_seconds(tool))
        await self.launcher.launch_call(call_id)
        return RelayedStream(log.key, log.token)

    def journal(self, call_id: str, tool: Tool) -> StepJournal:
        """Where the call `call_id` keeps its steps, and from which its runs take answers to their questions."""
        from stratus.server.steps import StepJournal

        return StepJournal(self.stores.cache, call_id, record_seconds(tool))

    async def suspend(self, call: Call, call_id: str, tool: Tool, questions: JsonObject, outbound: Outbound) -> None:
        """`call`, running on a live stream, asked `questions`: store it suspended and send them on its stream (whose
        log a poll reads, and the next run appends to), for the stream to end after them."""
        assert outbound.log is not None, "a suspendable call's stream is logged"
        request = _kept(call, outbound.log)
        record = TaskRecord(task_id=call_id, principal=call.principal_key, status="running", request=request)
        await self.stores.tasks.create(record, ttl_seconds=record_seconds(tool))  # a record is created without outcome
        outcome = TaskOutcome(input_requests=questions, asked=tuple(sorted(questions)))
        await self.stores.tasks.update(call_id, status="input_required", outcome=outcome, expect=("running",))
        await self.stores.cache.set(sent_key(call_id), str(outbound.sent), record_seconds(tool))
        if call.steps is not None:
            await call.steps.keep_log_count()
        await ask(outbound, CALL, call_id, questions)

    async def answer(self, session: SessionRecord, call_id: str, key: str, reply: JsonObject) -> bool:
        """A client's reply to a suspended call's question, kept as its answer; the last one starts the call again.
        Whether the call was this session's and waited for it."""
        record = await self.stores.tasks.get(call_id)
        answer = reply_answer(reply)
        if (
            record is None
            or not isinstance(record.request, RelayedCall)
            or record.request.session_id != session.session_id
            or record.status != "input_required"
            or answer is None
        ):
            return False
        kept, complete = await KeptAnswers(self.stores.cache).keep(record, {key: answer})
        if complete and await self.stores.tasks.update(call_id, status="working", outcome=None, expect=LIVE_ASKED):
            assert self.launcher is not None, "only a dispatcher with a launcher suspends calls"
            await self.launcher.launch_call(call_id, trace=record.request.trace)
        return kept

    async def run(self, call_id: str, *, lambda_context: Any = None) -> bool:
        """Run a stored call once, its messages and response (or its next questions) appended to its stream log;
        whether it ran."""
        from stratus.protocol.worker_events import own_record

        record = await own_record(self.stores.tasks, call_id, RelayedCall)
        if (
            record is None
            or not isinstance(record.request, RelayedCall)
            or not await self.stores.tasks.update(call_id, status="running", outcome=None, expect=("working",))
        ):
            return False  # unknown, expired, no call, or delivered again: another run has it
        request = record.request
        asked = record.outcome.asked if record.outcome is not None else ()
        session = await self.stores.sessions.load(request.session_id)
        outbound = RelayedOutbound(skip=int(await self.stores.cache.get(sent_key(call_id)) or 0))
        outbound.log = StreamLog(self.stores.events, request.session_id, priming=True, token=request.stream_token)
        params: JsonObject = {"name": request.tool, "arguments": request.arguments}
        if request.meta is not None:
            params["_meta"] = request.meta
        message = Request(id=request.request_id, method="tools/call", params=params)
        if session is None:  # ended meanwhile: its client is gone, and nothing may run on its behalf
            await outbound.record_final(error_response(message.id, McpError("The session ended before the call ran")))
            return True
        # Like a multi round-trip retry, the run starts over with every answer its client has given so far.
        params["inputResponses"] = await KeptAnswers(self.stores.cache).of(call_id, list(asked))
        http = HttpRequest("POST", "", {}, lambda_context=lambda_context, outbound=outbound)
        call = Call.in_session(message, session, http, principal_from(request.principal))
        try:
            tool = self.server.tools.get(request.tool)
            if tool is None:
                raise InvalidParamsError(f"Unknown tool: {request.tool}")
            call.steps = self.journal(call_id, tool)
            result = await self.run_tool(call, tool, request.arguments)
            if result.get("resultType") == "input_required":
                questions: JsonObject = result["inputRequests"]
                await self.stores.cache.set(sent_key(call_id), str(outbound.sent), record_seconds(tool))
                await call.steps.keep_log_count()
                await ask(outbound, CALL, call_id, questions)
                outcome = TaskOutcome(input_requests=questions, asked=tuple(sorted({*asked, *questions})))
                await self.stores.tasks.update(call_id, status="input_required", outcome=outcome, expect=("running",))
                return True
            response = result_response(message.id, result)
        except McpError as error:
            response = error_response(message.id, error)
        await outbound.record_final(response)
        await self.stores.tasks.update(call_id, status="completed", outcome=None, expect=("running",))
        return True


LIVE_ASKED = ("input_required",)


def new_call_id() -> str:
    return f"call-{secrets.token_urlsafe(18)}"


def record_seconds(tool: Tool) -> float:
    """How long a relayed or suspended call's record (and its steps and answers) lives: its runs' time, and an hour
    for its client's answers."""
    return (tool.policy.timeout or WORKER_SECONDS) + RUN_MARGIN_SECONDS + ANSWER_SECONDS


def sent_key(call_id: str) -> str:
    """Where a suspended call keeps how many messages its runs sent before its last question."""
    return f"call-sent:{call_id}"


def _kept(call: Call, log: StreamLog) -> RelayedCall:
    """What a later run needs of `call`, whose stream is `log`."""
    assert call.session is not None, "only a session's calls are relayed"
    meta = call.params.get("_meta")
    return RelayedCall(
        tool=call.string_param("name"),  # as the client named it: the name `run` finds the tool by
        arguments=call.object_param("arguments"),
        request_id=call.request.id,
        session_id=call.session.session_id,
        stream_token=log.token,
        principal=kept_principal(call.principal),
        meta=meta if isinstance(meta, dict) else None,
        trace=current_trace_context() or None,
    )
