"""The task worker's on-failure destination (template.yaml: the SweeperFunction): Lambda's record of a launch that
failed, read and its task or relayed call marked failed (`stratus.protocol.run_failures`).

The record (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html) is
`{"version": "1.0", "timestamp", "requestContext": {"requestId", "functionArn", "condition",
"approximateInvokeCount"}, "requestPayload": <the launch's event>, "responseContext": {...}, "responsePayload":
<the error>}`; the launch's event names the run (`{"stratusTask": id}` or `{"stratusCall": id}`,
`stratus.handlers.task_worker`).

The durable task worker has no destinations: an execution that ended FAILED, STOPPED or TIMED_OUT sends its event to
the function's dead-letter queue (https://docs.aws.amazon.com/lambda/latest/dg/durable-best-practices.html), which the
sweeper reads through an SQS event source mapping. Each message's body is the event, its attributes the `RequestID`,
`ErrorCode` and `ErrorMessage` (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html);
the event comes as an SQS record (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html). A stopped execution's
task was cancelled: it is no longer `working`, so marking it failed changes nothing.
"""

from __future__ import annotations

import json
import logging
from typing import Any, NamedTuple

from stratus import Settings
from stratus.composition import stores_for
from stratus.handlers.task_worker import CALL_EVENT_KEY, TASK_EVENT_KEY
from stratus.protocol.run_failures import DEAD_LETTER, fail_call, fail_task

logger = logging.getLogger("stratus.tasks")


class FailedLaunch(NamedTuple):
    """What an invocation record tells of a failed launch."""

    run_id: str
    relayed: bool
    """A relayed call's launch (else a task's)."""
    condition: str
    request_id: str
    attempts: int


def failed_launch(event: Any) -> FailedLaunch | None:
    """The launch an asynchronous invocation record tells of; None for any other event (or a record of an event
    that launched no run)."""
    if not isinstance(event, dict) or event.get("version") != "1.0":
        return None
    context, payload = event.get("requestContext"), event.get("requestPayload")
    if not isinstance(context, dict) or not isinstance(payload, dict):
        return None
    for key, relayed in ((TASK_EVENT_KEY, False), (CALL_EVENT_KEY, True)):
        run_id = payload.get(key)
        if isinstance(run_id, str):
            attempts = context.get("approximateInvokeCount")
            return FailedLaunch(
                run_id,
                relayed,
                str(context.get("condition", "")),
                str(context.get("requestId", "")),
                attempts if isinstance(attempts, int) else 0,
            )
    return None


def dead_letters(event: Any) -> list[FailedLaunch] | None:
    """The durable worker's launches an SQS batch of its dead-letter queue tells of (a message naming no task is
    skipped); None for any other event."""
    records = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(records, list) or not records:
        return None
    if not all(isinstance(record, dict) and record.get("eventSource") == "aws:sqs" for record in records):
        return None
    launches = []
    for record in records:
        try:
            payload = json.loads(record.get("body") or "")
        except ValueError:
            payload = None
        task_id = payload.get(TASK_EVENT_KEY) if isinstance(payload, dict) else None
        if not isinstance(task_id, str):
            logger.warning("a dead letter names no task", extra={"message_id": record.get("messageId")})
            continue
        attributes = record.get("messageAttributes") or {}
        error_code = (attributes.get("ErrorCode") or {}).get("stringValue", "")
        request_id = (attributes.get("RequestID") or {}).get("stringValue", "")
        launches.append(FailedLaunch(task_id, False, f"{DEAD_LETTER}:{error_code}", str(request_id), 0))
    return launches


async def mark_failed(settings: Settings, launch: FailedLaunch) -> bool:
    """Mark the launch's run failed in the store `settings` names; whether this record moved it (False: it had
    ended, or another delivery of the record got there first)."""
    stores = stores_for(settings)
    try:
        fail = fail_call if launch.relayed else fail_task
        moved = await fail(stores, launch.run_id, launch.condition)
    finally:
        await stores.aclose()
    fields = {
        "call" if launch.relayed else "task": launch.run_id,
        "condition": launch.condition,
        "request_id": launch.request_id,
        "attempts": launch.attempts,
        "marked_failed": moved,
    }
    logger.warning("a task worker launch failed", extra=fields)
    return moved
