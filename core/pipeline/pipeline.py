"""The execution pipeline: every tool call, resource read and prompt get, in the same order.

    tool call                                   resource read / prompt get
    1. request context (contextvar)             1. request context
    2. global guards populate the user          2. global guards
    3. per-item authorization                   3. per-item authorization
    4. middleware: server's, then the tool's    4. server middleware
       a. rate limits (tool, principal,            a. timeout
          session, overall)                        b. handler
       b. timeout around
       c. circuit breaker around
       d. retry around
       e. the handler
    5. metrics, on success and on failure       5. metrics

The timeout is the tightest of the item's, the server's and Lambda's remaining time less a margin, so a slow
handler gets a clean error before Lambda stops the container. Client cancellation fires the same timer early.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from stratus.errors import (
    CircuitOpenError,
    ForbiddenError,
    McpError,
    RateLimitedError,
    RequestTimeoutError,
    StoreBusyError,
    StoreUnavailableError,
    UnauthorizedError,
)
from stratus.metrics import MetricsSink
from stratus.pipeline.access import authenticate, authorize
from stratus.pipeline.chain import chain
from stratus.pipeline.current import serving
from stratus.request.http import HttpRequest
from stratus.request.inputs import InputRequired
from stratus.resilience.backoff import full_jitter
from stratus.resilience.breaker import Admission, BreakerPolicy, CircuitState
from stratus.resilience.closed_breakers import CLOSED, CLOSED_SECONDS, ClosedBreakers
from stratus.resilience.deadline import Clock, Deadline
from stratus.resilience.limit_shards import spread
from stratus.resilience.limiter import Decision
from stratus.server.context import Context
from stratus.server.policy import Access, Middleware, RetryPolicy, ServerPolicy
from stratus.server.principal import Principal
from stratus.server.signature import ArgumentsError
from stratus.server.tools import Tool, ToolError
from stratus.stores.base import Stores
from stratus.stores.records import CallAdmission, CallChecks
from stratus.types import JsonObject

logger = logging.getLogger("stratus.pipeline")

Sleep = Callable[[float], Awaitable[None]]

_NO_CHECKS = CallChecks()
_NOTHING_ASKED = CallAdmission(None, (), None)
_OUTCOMES: tuple[tuple[type[Exception], str], ...] = (
    (RateLimitedError, "rate_limited"),
    (CircuitOpenError, "circuit_open"),
    (RequestTimeoutError, "timeout"),
    (UnauthorizedError, "denied"),
    (ForbiddenError, "denied"),
    (ArgumentsError, "invalid_arguments"),
    (InputRequired, "input_required"),
)


def _serving_each(terminal: Callable[[Context], Awaitable[Any]]) -> Callable[[Context], Awaitable[Any]]:
    """The terminal step, with the context middleware passed down made the current one."""

    async def step(context: Context) -> Any:
        with serving(context):
            return await terminal(context)

    return step


def is_retryable(error: BaseException) -> bool:
    """Whether the error is marked transient (`retryable = True`, e.g. `ToolError(..., retryable=True)`)."""
    return getattr(error, "retryable", False) is True


def is_failure(error: BaseException) -> bool:
    """Whether an exception from a handler says the tool is failing (breaker) and may be transient (retry).

    Validation and protocol errors are the caller's; a plain ToolError is the tool answering "no". Anything
    unexpected, and a ToolError marked retryable, is a failure.
    """
    if isinstance(error, ArgumentsError | McpError | InputRequired):
        return False
    if isinstance(error, ToolError):
        return error.retryable
    return isinstance(error, Exception)


class Pipeline:
    """Runs calls through the stages above, with state in the injected stores."""

    def __init__(
        self,
        policy: ServerPolicy,
        stores: Stores,
        metrics: MetricsSink,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        rand: Callable[[], float] = random.random,
        fail_open: bool = True,
        authenticates: bool = True,
        closed_breaker_seconds: float = CLOSED_SECONDS,
    ) -> None:
        self.policy = policy
        self.stores = stores
        self.metrics = metrics
        self.clock = clock
        self.sleep = sleep
        self.rand = rand
        self.fail_open = fail_open
        """Whether rate limits and breakers let calls through while the store cannot be reached."""
        self.authenticates = authenticates or bool(policy.authenticators)
        """Whether any request can carry a user: the transport authenticates, or the server has authenticators."""
        limits = policy.rate_limits
        self._server_limits = any((limits.per_tool, limits.per_principal, limits.per_session, limits.overall))
        self._closed = ClosedBreakers(clock, closed_breaker_seconds)
        """Breakers this container found closed moments ago: its calls skip asking the store about them."""

    # -- entry points ----------------------------------------------------------------------------------------

    def deadline_for(self, request: HttpRequest | None, item_timeout: float | None) -> Deadline:
        """The tightest of the item's timeout, the server's, and Lambda's remaining time less the margin."""
        lambda_left: float | None = None
        lambda_context = request.lambda_context if request else None
        if lambda_context is not None:
            lambda_left = lambda_context.get_remaining_time_in_millis() / 1000.0 - self.policy.deadline_margin
        return Deadline.within(item_timeout, self.policy.timeout, lambda_left, clock=self.clock)

    def checks_for(self, tool: Tool, principal: Principal | None, session_id: str | None) -> CallChecks:
        """The rate-limit buckets and the breaker a call of `tool` asks the store about (no session)."""
        breaker = tool.policy.breaker or self.policy.breaker
        if breaker is None and tool.policy.rate_limit is None and not self._server_limits:
            return _NO_CHECKS
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

    async def admit_with_session(
        self, tool: Tool, principal: Principal | None, session_id: str
    ) -> CallAdmission | None:
        """Load a handshake-era session together with the tool's limits and breaker (one store round trip).

        None when the session should be loaded on its own: the tool asks the store nothing, or something that runs
        before the limits could still refuse the call (authenticators, guards, middleware, a scope or role the
        caller lacks), and a refused call must spend nothing. The gate itself spends nothing unless the session is
        the caller's and every check passes. Sessions fail closed: a store outage raises StoreUnavailableError
        whatever the limits' policy.
        """
        checks = self.checks_for(tool, principal, session_id)
        if not checks.limits and checks.breaker is None:
            return None
        if not self._nothing_refuses_before_the_limits(tool, principal):
            return None
        owner = principal.key if principal else None
        return await self._gate(checks._replace(session_id=session_id, owner=owner))

    def _nothing_refuses_before_the_limits(self, tool: Tool, principal: Principal | None) -> bool:
        access = tool.policy.access
        if self.policy.authenticators or self.policy.middleware or tool.policy.middleware or access.guards:
            return False
        return not access.restricted or access.grants(principal)

    async def call_tool(
        self, tool: Tool, arguments: JsonObject, context: Context, admitted: CallAdmission | None = None
    ) -> JsonObject:
        """Run a `tools/call` through every stage; returns the `CallToolResult`.

        `context` names the tool (`item`) and carries the deadline from `deadline_for`. `admitted` is the store's
        answer to `checks_for`, when the transport already asked (together with loading the session).

        Raises:
            ArgumentsError: the arguments failed validation.
            McpError: denied, rate limited, circuit open, timed out, or a protocol error from the tool.
        """

        async def terminal(ctx: Context) -> JsonObject:
            kwargs = tool.validate(arguments)
            checks = self.checks_for(tool, ctx.user, ctx.session_id)
            admission = admitted
            if admission is None and (checks.limits or checks.breaker):
                admission = await self._admit(checks, tool)
            if admission is not None:
                self._enforce_limits(tool, checks, admission)
            if checks.breaker is None and self._retry_policy(tool) is None:
                work = tool.run(kwargs, ctx)  # what _breaker and _retry come down to, two coroutines fewer
            else:
                work = self._breaker(tool, ctx, kwargs, checks, admission)
            try:
                value = await self._within_deadline(ctx, work)
            except (ArgumentsError, McpError, InputRequired):
                raise
            except Exception as error:  # noqa: BLE001 - the tool's failure becomes its isError result (logged)
                return tool.failure(error)
            return tool.result(value)

        middleware = (*self.policy.middleware, *tool.policy.middleware)
        result: JsonObject = await self._run(context, "tools/call", tool.policy.access, middleware, terminal)
        return result

    async def read(
        self, context: Context, kind: str, access: Access, handler: Callable[[Context], Awaitable[Any]]
    ) -> Any:
        """Run a resource read or prompt get: guards, authorization, server middleware, timeout, handler."""

        async def terminal(ctx: Context) -> Any:
            return await self._within_deadline(ctx, handler(ctx))

        return await self._run(context, kind, access, self.policy.middleware, terminal)

    # -- stages ----------------------------------------------------------------------------------------------

    async def _run(
        self,
        context: Context,
        kind: str,
        access: Access,
        middleware: Sequence[Middleware],
        terminal: Callable[[Context], Awaitable[Any]],
    ) -> Any:
        name = context.item or ""
        started = time.perf_counter()
        outcome = "error"
        try:
            with serving(context):
                if self.policy.authenticators:
                    context = await authenticate(context, self.policy.authenticators)
                if access.restricted:
                    kind_name = kind.split("/")[0].rstrip("s")
                    await authorize(context, access, kind=kind_name, authenticates=self.authenticates)
                if not middleware:
                    result = await terminal(context)
                else:
                    result = await chain(middleware, _serving_each(terminal))(context)
            outcome = "tool_error" if isinstance(result, dict) and result.get("isError") else "success"
            return result
        except Exception as error:
            outcome = next((label for kind_, label in _OUTCOMES if isinstance(error, kind_)), "error")
            raise
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            self.metrics.count("calls", method=kind, item=name, outcome=outcome)
            self.metrics.latency("latency", elapsed_ms, method=kind, item=name)
            if outcome != "success":
                self.metrics.count("errors", method=kind, item=name, outcome=outcome)

    async def _admit(self, checks: CallChecks, tool: Tool) -> CallAdmission:
        try:
            return await self._gate(checks)
        except StoreUnavailableError as error:
            if not self.fail_open or isinstance(error, StoreBusyError):
                raise
            self.metrics.count("store_unavailable", item=tool.name, stage="admission")
            logger.warning("store unavailable: rate limits and breaker skipped (fail open)", extra={"tool": tool.name})
            allowed = tuple(Decision(True) for _ in checks.limits)
            return CallAdmission(None, allowed, Admission(True, CircuitState.CLOSED) if checks.breaker else None)

    async def _gate(self, checks: CallChecks) -> CallAdmission:
        """The store's answer to `checks`, leaving out a breaker this container found closed moments ago
        (stratus.resilience.closed_breakers: another container's opening is seen at most CLOSED_SECONDS late)."""
        key = checks.breaker[0] if checks.breaker else None
        if key is None or not self._closed.closed(key):
            admission = await self.stores.gate.admit(checks)
            if key is not None and (admission.session is not None or not checks.session_id):
                self._closed.saw(key, admission.breaker)
            return admission
        asked = checks._replace(breaker=None)
        admission = await self.stores.gate.admit(asked) if asked.limits or asked.session_id else _NOTHING_ASKED
        if checks.session_id and admission.session is None:
            return admission  # no session of the caller's: nothing was asked or taken
        return admission._replace(breaker=CLOSED)

    def _enforce_limits(self, tool: Tool, checks: CallChecks, admission: CallAdmission) -> None:
        for (key, _), decision in zip(checks.limits, admission.decisions, strict=True):
            if not decision.allowed:
                scope = key.split(":", 1)[0]
                self.metrics.count("rate_limited", item=tool.name, scope=scope)
                raise RateLimitedError(scope, decision.retry_after)

    async def _within_deadline(self, context: Context, work: Awaitable[Any]) -> Any:
        """Await `work` until the deadline, or until the client cancels; both end it with an error."""
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

    async def _breaker(
        self,
        tool: Tool,
        context: Context,
        kwargs: dict[str, Any],
        checks: CallChecks,
        admission: CallAdmission | None,
    ) -> Any:
        if checks.breaker is None or admission is None or admission.breaker is None:
            return await self._retry(tool, context, kwargs)
        key, policy = checks.breaker
        if not admission.breaker.allowed:
            raise CircuitOpenError(tool.name, admission.breaker.retry_after)
        closed = admission.breaker.state is CircuitState.CLOSED
        try:
            value = await self._retry(tool, context, kwargs)
        except asyncio.CancelledError:
            if context.deadline is not None and context.deadline.expired:
                await self._record(tool, key, policy, success=False)
            raise
        except Exception as error:
            success = not is_failure(error)
            if not (success and closed):
                await self._record(tool, key, policy, success=success)
            raise
        if not closed:  # a success seen by a closed breaker changes nothing: skip the round trip
            await self._record(tool, key, policy, success=True)
        return value

    async def _record(self, tool: Tool, key: str, policy: BreakerPolicy, *, success: bool) -> None:
        self._closed.forget(key)  # a failure, or a circuit not closed: ask the store again from the next call
        try:
            before, after = await self.stores.breakers.record(key, policy, success=success)
        except StoreUnavailableError:
            # The call has happened; its result matters more than the breaker's bookkeeping.
            self.metrics.count("store_unavailable", item=tool.name, stage="breaker_record")
            logger.warning("store unavailable: breaker outcome not recorded", extra={"tool": tool.name})
            return
        if before is not after:
            self.metrics.count("breaker_transitions", item=tool.name, state=after.value)
            log = logger.warning if after is CircuitState.OPEN else logger.info
            log("circuit breaker changed state", extra={"tool": tool.name, "from": before.value, "to": after.value})

    def _retry_policy(self, tool: Tool) -> RetryPolicy | None:
        # A policy declared on the tool is honoured as declared; the server-wide one only for idempotent tools.
        return tool.policy.retry or (self.policy.retry if tool.idempotent else None)

    async def _retry(self, tool: Tool, context: Context, kwargs: dict[str, Any]) -> Any:
        policy = self._retry_policy(tool)
        if policy is None:
            return await tool.run(kwargs, context)
        attempt = 0
        while True:
            try:
                return await tool.run(kwargs, context)
            except Exception as error:
                attempt += 1
                if not is_retryable(error) or attempt >= policy.attempts:
                    raise
                delay = full_jitter(attempt - 1, base=policy.base_delay, cap=policy.max_delay, rand=self.rand)
                if context.deadline is not None and not context.deadline.allows(delay):
                    raise
                self.metrics.count("retries", item=tool.name)
                await self.sleep(delay)
