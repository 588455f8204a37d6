"""Admission, the pipeline's first stage: what a tools/call asks the store before it runs, asked all at once.

A call of a tool with rate limits or a breaker asks the store's `CallGate` about every bucket and the breaker
together, all or nothing: a call any of them refuses spends no token and no half-open trial. A handshake-era
session is loaded in the same round trip when the pipeline says nothing before admission could still refuse the call
(`Pipeline.prefetch_checks`); otherwise the call is admitted after authorization. A breaker this container found
closed moments ago is not asked again (stratus.resilience.closed_breakers). While the store cannot be reached, limits
and breakers let calls through (`fail_open`, counted as `store_unavailable`) or the call fails with 503; sessions
always fail closed.
"""

from __future__ import annotations

import logging

from stratus.errors import StoreBusyError, StoreUnavailableError
from stratus.metrics import MetricsSink
from stratus.resilience.breaker import Admission, CircuitState
from stratus.resilience.closed_breakers import CLOSED, ClosedBreakers
from stratus.resilience.limit_shards import spread
from stratus.resilience.limiter import Decision
from stratus.server.policy import ServerPolicy
from stratus.server.principal import Principal
from stratus.server.tools import Tool
from stratus.stores.base import CallGate
from stratus.stores.records import CallAdmission, CallChecks

logger = logging.getLogger("stratus.pipeline")

NO_CHECKS = CallChecks()
_NOTHING_ASKED = CallAdmission(None, (), None)


class Admitter:
    """Asks the store's gate what a call of a tool may do: its buckets' decisions and its breaker's admission."""

    def __init__(
        self,
        policy: ServerPolicy,
        gate: CallGate,
        metrics: MetricsSink,
        closed: ClosedBreakers,
        *,
        fail_open: bool = True,
    ) -> None:
        self.policy = policy
        self.gate = gate
        self.metrics = metrics
        self.closed = closed
        self.fail_open = fail_open
        """Whether rate limits and breakers let calls through while the store cannot be reached."""
        limits = policy.rate_limits
        self._server_limits = any((limits.per_tool, limits.per_principal, limits.per_session, limits.overall))

    def checks_for(self, tool: Tool, principal: Principal | None, session_id: str | None) -> CallChecks:
        """The rate-limit buckets and the breaker a call of `tool` asks the store about (no session)."""
        breaker = tool.policy.breaker or self.policy.breaker
        if breaker is None and tool.policy.rate_limit is None and not self._server_limits:
            return NO_CHECKS
        limits = self.policy.rate_limits
        tool_limit = tool.policy.rate_limit or limits.per_tool
        wanted = [
            # Every call counts on the tool's and the overall limit: each is spread over several keys.
            spread(f"tool:{tool.policy.group or tool.name}", tool_limit) if tool_limit else (None, None),
            (f"principal:{principal.key}" if principal else None, limits.per_principal),
            (f"session:{session_id}" if session_id else None, limits.per_session),
            spread("overall", limits.overall) if limits.overall else (None, None),
        ]
        return CallChecks(
            limits=tuple((key, limit) for key, limit in wanted if key is not None and limit is not None),
            breaker=(f"tool:{tool.policy.group or tool.name}", breaker) if breaker else None,
        )

    async def with_session(self, checks: CallChecks) -> CallAdmission:
        """The gate's answer to checks that name a session: the session (None unless it is the caller's) with the
        decisions. The gate spends nothing unless the session is the caller's and every check passes.

        Raises:
            StoreUnavailableError: the store could not be reached (sessions fail closed, whatever the limits' policy).
        """
        return await self._ask(checks)

    async def admit(self, checks: CallChecks, tool: Tool) -> CallAdmission:
        """The store's answer to `checks`; with the store unreachable and `fail_open`, everything allowed."""
        try:
            return await self._ask(checks)
        except StoreUnavailableError as error:
            if not self.fail_open or isinstance(error, StoreBusyError):
                raise
            self.metrics.count("store_unavailable", item=tool.name, stage="admission")
            logger.warning("store unavailable: rate limits and breaker skipped (fail open)", extra={"tool": tool.name})
            allowed = tuple(Decision(True) for _ in checks.limits)
            return CallAdmission(None, allowed, Admission(True, CircuitState.CLOSED) if checks.breaker else None)

    async def _ask(self, checks: CallChecks) -> CallAdmission:
        """The gate's answer to `checks`, leaving out a breaker this container found closed moments ago (another
        container's opening is seen at most CLOSED_SECONDS late)."""
        key = checks.breaker[0] if checks.breaker else None
        if key is None or not self.closed.closed(key):
            admission = await self.gate.admit(checks)
            if key is not None and (admission.session is not None or not checks.session_id):
                self.closed.saw(key, admission.breaker)
            return admission
        asked = checks._replace(breaker=None)
        admission = await self.gate.admit(asked) if asked.limits or asked.session_id else _NOTHING_ASKED
        if checks.session_id and admission.session is None:
            return admission  # no session of the caller's: nothing was asked or taken
        return admission._replace(breaker=CLOSED)
