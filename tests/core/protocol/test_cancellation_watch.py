"""A session's call listens for a cancellation sent to another process once it has run WATCH_AFTER seconds; a call
that ended sooner never asks the store. One timer serves every waiting call, so a call that ends early must not
take a later call's watch with it."""

from __future__ import annotations

import asyncio
import time

import pytest

from stratus.protocol import cancellation
from stratus.protocol.cancellation import RunningCalls
from stratus.server.context import Context
from stratus.stores.memory.streams import MemoryPendingRequestStore

pytestmark = pytest.mark.anyio
WATCH_AFTER = 0.02
BOUND_SECONDS = 5.0


def _call(request_id: int) -> Context:
    return Context(request_id=request_id, method="tools/call", protocol_version="2025-11-25", session_id="s1")


async def _deliver_from_another_process(pending: MemoryPendingRequestStore, key: str, reason: str) -> bool:
    """What `notifications/cancelled` does on a container that is not running the call: deliver to the call's box,
    which exists once the call has started listening (polled, bounded in tries and time)."""
    deadline = time.monotonic() + BOUND_SECONDS
    for _ in range(2000):
        if await pending.deliver(key, reason):
            return True
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(WATCH_AFTER / 4)
    return False


async def test_a_call_still_running_hears_the_cancellation_while_one_that_ended_early_never_asked_the_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cancellation, "WATCH_AFTER", WATCH_AFTER)
    pending = MemoryPendingRequestStore()
    running = RunningCalls(pending)
    early, late = _call(1), _call(2)
    early_watch = running.start(1, early)
    late_watch = running.start(2, late)
    running.stop(1, early, early_watch)  # the first call ends before its watch is due: it leaves no box

    assert await _deliver_from_another_process(pending, "s1/cancel/2", "user")
    await asyncio.wait_for(late.signal.wait(), BOUND_SECONDS)

    assert late.signal.reason == "user"
    assert not early.signal.cancelled
    assert not await pending.deliver("s1/cancel/1", "too late")
    running.stop(2, late, late_watch)


async def test_a_call_outside_a_session_has_no_watch() -> None:
    running = RunningCalls(MemoryPendingRequestStore())
    context = Context(request_id=1, method="tools/call", protocol_version="2026-07-28")

    assert running.start(1, context) is None
    running.stop(1, context, None)
