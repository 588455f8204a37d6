"""The circuit breaker around a tool's (retried) handler: refused while open, its outcome recorded in the store.

What counts as a failure is the tool failing, not the caller: validation and protocol errors and a plain
`ToolError` (the tool answering "no") leave the breaker alone; anything unexpected, a `ToolError` marked retryable,
and a call cut by its deadline count. A success that a closed breaker saw changes nothing and costs no round trip.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from stratus.errors import CircuitOpenError, McpError, StoreUnavailableError
from stratus.metrics import MetricsSink
from stratus.request.inputs import InputRequired
from stratus.resilience.breaker import BreakerPolicy, CircuitState
from stratus.resilience.closed_breakers import ClosedBreakers
from stratus.server.context import Context
from stratus.server.signature import ArgumentsError
from stratus.server.tools import Tool, ToolError
from stratus.stores.base import BreakerStore
from stratus.stores.records import CallAdmission, CallChecks

logger = logging.getLogger("stratus.pipeline")


def is_failure(error: BaseException) -> bool:
    """Whether an exception from a handler says the tool is failing (breaker) and may be transient (retry)."""
    if isinstance(error, ArgumentsError | McpError | InputRequired):
        return False
    if isinstance(error, ToolError):
        return error.retryable
    return isinstance(error, Exception)


class Circuit:
    """Guards calls with the breaker admission granted, and records their outcomes in the breaker store."""

    def __init__(self, breakers: BreakerStore, metrics: MetricsSink, closed: ClosedBreakers) -> None:
        self.breakers = breakers
        self.metrics = metrics
        self.closed = closed
        """Shared with admission: a recorded failure makes this container ask the store again."""

    async def around(
        self,
        tool: Tool,
        context: Context,
        checks: CallChecks,
        admission: CallAdmission | None,
        work: Callable[[], Awaitable[Any]],
    ) -> Any:
        """Run `work` unless the circuit is open.

        Raises:
            CircuitOpenError: the breaker refused the call.
        """
        if checks.breaker is None or admission is None or admission.breaker is None:
            return await work()
        key, policy = checks.breaker
        if not admission.breaker.allowed:
            raise CircuitOpenError(tool.name, admission.breaker.retry_after)
        closed = admission.breaker.state is CircuitState.CLOSED
        try:
            value = await work()
        except asyncio.CancelledError:
            if context.deadline is not None and context.deadline.expired:
                await self._record(tool, key, policy, success=False)
            raise
        except Exception as error:
            success = not is_failure(error)
            if not (success and closed):
                await self._record(tool, key, policy, success=success)
            raise
        if not closed:
            await self._record(tool, key, policy, success=True)
        return value

    async def _record(self, tool: Tool, key: str, policy: BreakerPolicy, *, success: bool) -> None:
        self.closed.forget(key)
        try:
            before, after = await self.breakers.record(key, policy, success=success)
        except StoreUnavailableError:
            # The call has happened; its result matters more than the breaker's bookkeeping.
            self.metrics.count("store_unavailable", item=tool.name, stage="breaker_record")
            logger.warning("store unavailable: breaker outcome not recorded", extra={"tool": tool.name})
            return
        if before is not after:
            self.metrics.count("breaker_transitions", item=tool.name, state=after.value)
            log = logger.warning if after is CircuitState.OPEN else logger.info
            log("circuit breaker changed state", extra={"tool": tool.name, "from": before.value, "to": after.value})
