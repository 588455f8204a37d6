"""The deadline around a call: the tightest of the item's timeout, the server's and Lambda's remaining time less a
margin, so a slow handler gets a clean error before Lambda stops the container. The client's cancellation fires
the same timer early."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Generator
from typing import Any

from stratus.errors import RequestTimeoutError
from stratus.request.http import HttpRequest
from stratus.resilience.deadline import Clock, Deadline
from stratus.server.context import Context
from stratus.server.policy import ServerPolicy


def deadline_for(
    policy: ServerPolicy, request: HttpRequest | None, item_timeout: float | None, clock: Clock
) -> Deadline:
    """The tightest of the item's timeout, the server's, and Lambda's remaining time less the margin."""
    # Deadline.within's reckoning, unrolled: this runs for every call.
    limit = item_timeout
    if policy.timeout is not None and (limit is None or policy.timeout < limit):
        limit = policy.timeout
    lambda_context = request.lambda_context if request else None
    if lambda_context is not None:
        lambda_left = lambda_context.get_remaining_time_in_millis() / 1000.0 - policy.deadline_margin
        if limit is None or lambda_left < limit:
            limit = lambda_left
    return Deadline(clock() + limit if limit is not None else float("inf"), clock)


async def within_deadline(context: Context, work: Awaitable[Any]) -> Any:
    """Await `work` until the context's deadline, or until the client cancels; both end it with an error.

    Raises:
        RequestTimeoutError: the deadline passed or the client cancelled.
    """
    try:
        return await _Bounded(context, work)
    except TimeoutError:
        if context.signal.cancelled:
            raise RequestTimeoutError(f"Request cancelled by the client ({context.item})") from None
        context.signal.cancel("deadline")
        raise RequestTimeoutError(f"'{context.item}' did not finish within its time limit") from None


class _Bounded:
    """`work`, its timer armed only once it first waits. Until then nothing could interrupt it: timers fire only
    when the event loop turns, which it does not while the work runs. A call that never waits (most tools) so costs
    no timer, and its invocation no turn of the loop to clear the cancelled timer away (handlers/invocation.py)."""

    __slots__ = ("context", "work")

    def __init__(self, context: Context, work: Awaitable[Any]) -> None:
        self.context = context
        self.work = work

    def __await__(self) -> Generator[Any, Any, Any]:
        steps = self.work.__await__()
        try:
            waiting = steps.send(None)
        except StopIteration as done:
            return done.value
        return (yield from _armed(self.context, steps, waiting).__await__())


async def _armed(context: Context, steps: Generator[Any, Any, Any], waiting: Any) -> Any:
    """The rest of `steps`, which is waiting on `waiting`, within the deadline and until the client cancels."""
    remaining = context.deadline.remaining() if context.deadline else float("inf")
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(None if remaining == float("inf") else remaining) as timer:
        stop_listening = context.signal.on_cancel(lambda: timer.reschedule(loop.time()))
        try:
            return await _resumed(steps, waiting)
        finally:
            stop_listening()


@types.coroutine
def _resumed(steps: Generator[Any, Any, Any], waiting: Any) -> Generator[Any, Any, Any]:
    """`steps` continued from where it waits on `waiting`: what the task sends or throws in is passed on to it."""
    while True:
        try:
            sent = yield waiting
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as error:  # noqa: BLE001 - a cancellation or any error is the work's to handle
            try:
                waiting = steps.throw(error)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting = steps.send(sent)
            except StopIteration as done:
                return done.value
