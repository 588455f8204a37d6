"""The task worker's on-failure destination (template.yaml: the SweeperFunction): Lambda's record of a launch that
failed, read and its task or relayed call marked failed (`stratus.protocol.run_failures`).

The record (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html) is
`{"version": "1.0", "timestamp", "requestContext": {"requestId", "functionArn", "condition",
"approximateInvokeCount"}, "requestPayload": <the launch's event>, "responseContext": {...}, "responsePayload":
<the error>}`; the launch's event names the run (`{"stratusTask": id}` or `{"stratusCall": id}`,
`stratus.handlers.task_worker`).
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from stratus import Settings
from stratus.composition import stores_for
from stratus.handlers.task_worker import CALL_EVENT_KEY, TASK_EVENT_KEY
from stratus.protocol.run_failures import fail_call, fail_task

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
