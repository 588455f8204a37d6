"""The deadline around a call: the tightest of the item's timeout, the server's and Lambda's remaining time less a
margin, so a slow handler gets a clean error before Lambda stops the container. The client's cancellation fires
the same timer early."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
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
    lambda_left: float | None = None
    lambda_context = request.lambda_context if request else None
    if lambda_context is not None:
        lambda_left = lambda_context.get_remaining_time_in_millis() / 1000.0 - policy.deadline_margin
    return Deadline.within(item_timeout, policy.timeout, lambda_left, clock=clock)


async def within_deadline(context: Context, work: Awaitable[Any]) -> Any:
    """Await `work` until the context's deadline, or until the client cancels; both end it with an error.

    Raises:
        RequestTimeoutError: the deadline passed or the client cancelled.
    """
    remaining = context.deadline.remaining() if context.deadline else float("inf")
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(None if remaining == float("inf") else remaining) as timer:
            stop_listening = context.signal.on_cancel(lambda: timer.reschedule(loop.time()))
            try:
                return await work
            finally:
                stop_listening()
    except TimeoutError:
        if context.signal.cancelled:
            raise RequestTimeoutError(f"Request cancelled by the client ({context.item})") from None
        context.signal.cancel("deadline")
        raise RequestTimeoutError(f"'{context.item}' did not finish within its time limit") from None
