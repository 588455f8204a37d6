"""Runs that died in the task worker: a task or relayed call whose invocation crashed, timed out, or was never
started, marked failed so its client learns it ended.

Lambda tells of such a run with an invocation record sent to the task worker's on-failure destination
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html): `RetriesExhausted` when the
run failed (the handler raised, the runtime exited, the invocation timed out), `EventAgeExceeded` when the launch
waited in the event queue past its maximum age and never ran. The handler reading the record
(`stratus.handlers.failed_runs`) calls `fail_task` or `fail_call` here, with the store alone: no server is loaded.

Both are idempotent. Only a live run can fail (a task `working`: one waiting in `input_required` for its client
had its launch run; a relayed call `working` or `running`), in one conditional update of its record, and only the
update that moved it frees the task's place and tells its client: a record delivered twice, or one for a run that
ended meanwhile, changes nothing. A launch that aged out while another delivery of it runs (asynchronous
invocation may deliver an event twice) leaves that run be: it took the launch's claim first, and a failure of its
own would come as `RetriesExhausted`.

The durable task worker's dead letters (`DEAD_LETTER`) tell of an execution that ended FAILED or TIMED_OUT: nothing
will resume it, so a task it left waiting in `input_required` fails too (one it left `cancelled` stays so).

What the client sees carries no detail of the failure (the record's error stays in the log): a failed task with a
`statusMessage` and a JSON-RPC -32603 error (`tasks/get`, `tasks/result`); a relayed call's stream ends with a
-32603 error response to its request.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from stratus.errors import InternalError
from stratus.protocol.jsonrpc import error_response
from stratus.protocol.task_service import launch_key, task_place
from stratus.protocol.task_watch import task_stream
from stratus.request.outbound import StreamLog
from stratus.stores.task_records import RelayedCall, RpcError, TaskOutcome, TaskRequest

if TYPE_CHECKING:
    from stratus.stores.base import Stores

logger = logging.getLogger("stratus.tasks")
RETRIES_EXHAUSTED = "RetriesExhausted"
EVENT_AGE_EXCEEDED = "EventAgeExceeded"
DEAD_LETTER = "DeadLetter"
"""The condition of a durable execution's dead letter (`DeadLetter:<ErrorCode>`)."""
RUN_DIED = "The task's run stopped before it ended (its worker crashed or timed out)"
NEVER_STARTED = "The task was not started in time"
CALL_DIED = "The call stopped before it ended"
LIVE_CALL = ("working", "running")


def _status_message(condition: str) -> str:
    return NEVER_STARTED if condition == EVENT_AGE_EXCEEDED else RUN_DIED


async def fail_task(stores: Stores, task_id: str, condition: str) -> bool:
    """Mark a live task failed because its run died (`condition`: the record's); whether this call moved it."""
    task = await stores.tasks.get(task_id)
    live = ("working", "input_required") if condition.startswith(DEAD_LETTER) else ("working",)
    if task is None or task.status not in live or not isinstance(task.request, TaskRequest):
        return False  # ended, or waiting for its client: the launch it was given ran
    if condition == EVENT_AGE_EXCEEDED:
        # Claiming the launch also keeps a late delivery of it from running a task this marks failed.
        ttl = max(task.expires_at - task.updated_at, 1.0)
        if not await stores.cache.claim(launch_key(task), ttl):
            return False  # another delivery of this launch runs it (or ran it)
    message = _status_message(condition)
    outcome = TaskOutcome(error=RpcError.of(InternalError(message)), status_message=message)
    if not await stores.tasks.update(task_id, status="failed", outcome=outcome, expect=live):
        return False
    place = task_place(task)
    if place is not None:
        await stores.cache.delete(place)
    await stores.events.append(task_stream(task_id), "failed")
    return True


async def fail_call(stores: Stores, call_id: str, condition: str) -> bool:
    """Mark a live relayed call failed because its run died, and end its stream with an error response to its
    request; whether this call moved it."""
    record = await stores.tasks.get(call_id)
    live = ("working",) if condition == EVENT_AGE_EXCEEDED else LIVE_CALL  # `running`: another delivery runs it
    if record is None or record.status not in live or not isinstance(record.request, RelayedCall):
        return False
    if not await stores.tasks.update(call_id, status="failed", outcome=None, expect=live):
        return False
    request = record.request
    log = StreamLog(stores.events, request.session_id, priming=True, token=request.stream_token)
    await log.record(error_response(request.request_id, InternalError(CALL_DIED)))
    return True
