"""The execution pipeline: every tool call, resource read and prompt get, through the same stages in order.

    tool call                                   resource read / prompt get
    1. request context (contextvar)             1. request context
    2. guards: authenticators (the plan's           2. guards
       `before_call`), then the item's
       authorization
    3. middleware: server's, then the tool's    3. server middleware
       a. admission (the store's answer for        a. timeout
          the call's buckets and breaker),         b. handler
          or the one prefetched with the
          session (`prefetch_checks`)
       b. rate limits
       c. timeout around
       d. circuit breaker around
       e. retry around
       f. the handler
    4. metrics, on success and on failure       4. metrics

Each stage is a module of its own (admission, guards, rate_limits, timeout, circuit, retries, call_metrics), built
over the stores it needs by the composition root (stratus.composition.build_pipeline); this class holds their order,
and so decides, in `prefetch_checks`, when admission may be asked before the stages that come first: a handshake-era
session is then loaded in the same store round trip as the call's admission.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from stratus.errors import McpError
from stratus.metrics import MetricsSink
from stratus.pipeline import call_metrics, rate_limits
from stratus.pipeline.admission import Admitter
from stratus.pipeline.chain import chain
from stratus.pipeline.circuit import Circuit
from stratus.pipeline.current import serving
from stratus.pipeline.guards import authenticate, authorize
from stratus.pipeline.retries import Retries
from stratus.pipeline.timeout import deadline_for, within_deadline
from stratus.request.http import HttpRequest
from stratus.request.inputs import InputRequired
from stratus.resilience.deadline import Clock, Deadline
from stratus.server.context import Context
from stratus.server.policy import Access, Authenticator, Middleware, ServerPolicy
from stratus.server.principal import Principal
from stratus.server.signature import ArgumentsError
from stratus.server.tools import Tool
from stratus.stores.records import CallAdmission, CallChecks
from stratus.tracing import child_span
from stratus.types import JsonObject


class AuthenticationPlan:
    """Where authentication happens, and so what a refusal means."""

    __slots__ = ("anyone", "before_call")

    def __init__(self, before_call: tuple[Authenticator, ...] = (), *, anyone: bool = True) -> None:
        self.before_call = before_call
        """The authenticators the pipeline runs before each call: the server's own where nothing ran them for the
        request (a pipeline driven directly); none where the transport ran them (`McpEndpoint`) or a task's run
        carries the principal its creator had."""
        self.anyone = anyone
        """Whether any request can carry a user (the deployment authenticates, or the server has authenticators): a
        restricted item then answers 401 to a request without one, else 403 naming the setting that would
        help."""


EVERYONE_AUTHENTICATES = AuthenticationPlan()


def _serving_each(terminal: Callable[[Context], Awaitable[Any]]) -> Callable[[Context], Awaitable[Any]]:
    """The terminal step, with the context middleware passed down made the current one."""

    async def step(context: Context) -> Any:
        with serving(context):
            return await terminal(context)

    return step


class Pipeline:
    """Runs calls through the stages above, in order."""

    def __init__(
        self,
        policy: ServerPolicy,
        metrics: MetricsSink,
        *,
        admitter: Admitter,
        circuit: Circuit,
        retries: Retries,
        clock: Clock = time.monotonic,
        auth: AuthenticationPlan = EVERYONE_AUTHENTICATES,
    ) -> None:
        self.policy = policy
        self.auth = auth
        self.metrics = metrics
        self.admitter = admitter
        self.circuit = circuit
        self.retries = retries
        self.clock = clock
        self.deadline_for: Callable[[HttpRequest | None, float | None], Deadline] = partial(
            deadline_for, policy, clock=clock
        )
        """The deadline of a call of an item with this timeout (stratus.pipeline.timeout.deadline_for)."""

    def prefetch_checks(self, tool: Tool, principal: Principal | None, session_id: str) -> CallChecks | None:
        """What to ask the store about a call of `tool` together with loading its handshake-era session (one round
        trip), or None when the session should be loaded on its own: the tool asks the store nothing, or a stage
        before admission could still refuse the call, and a refused call must spend nothing. Plain, not a coroutine:
        most calls ask nothing, and those pay no await for it."""
        checks = self.admitter.checks_for(tool, principal, session_id)
        if not checks.limits and checks.breaker is None:
            return None
        if not self._nothing_refuses_before_admission(tool, principal):
            return None
        return checks._replace(session_id=session_id, owner=principal.key if principal else None)

    async def admit_with_session(self, checks: CallChecks) -> CallAdmission:
        """The store's answer to `prefetch_checks`: the session (None unless it is the caller's) with the decisions;
        nothing is spent unless the session is the caller's and every check passes. Pass it to `call_tool`.

        Raises:
            StoreUnavailableError: the store could not be reached (sessions fail closed, whatever the limits' policy).
        """
        return await self.admitter.with_session(checks)

    def _nothing_refuses_before_admission(self, tool: Tool, principal: Principal | None) -> bool:
        """Whether every stage before admission (authenticators, the item's authorization, middleware) is sure to let
        this call through: the one predicate that lets admission run early."""
        access = tool.policy.access
        if self.auth.before_call or self.policy.middleware or tool.policy.middleware or access.guards:
            return False
        return not access.restricted or access.grants(principal)

    async def call_tool(
        self, tool: Tool, arguments: JsonObject, context: Context, admitted: CallAdmission | None = None
    ) -> JsonObject:
        """Run a `tools/call` through every stage; returns the `CallToolResult`.

        `context` names the tool (`item`) and carries the deadline from `deadline_for`. `admitted` is the store's
        answer for the call's checks when it was asked with the session (`prefetch_checks`).

        Raises:
            ArgumentsError: the arguments failed validation.
            McpError: denied, rate limited, circuit open, timed out, or a protocol error from the tool.
        """

        async def terminal(ctx: Context) -> JsonObject:
            kwargs = tool.validate(arguments)
            checks = self.admitter.checks_for(tool, ctx.user, ctx.session_id)
            admission = admitted
            if admission is None and (checks.limits or checks.breaker):
                with child_span("admission"):  # the store's round trip for the limits and breaker
                    admission = await self.admitter.admit(checks, tool)
            if admission is not None:
                rate_limits.enforce(tool.name, checks, admission, self.metrics)
            if checks.breaker is None and self.retries.policy_for(tool) is None:
                work = tool.run(kwargs, ctx)  # what the breaker and retries come down to, two coroutines fewer
            else:
                work = self.circuit.around(tool, ctx, checks, admission, lambda: self.retries.run(tool, ctx, kwargs))
            try:
                with child_span("execute_tool", tool.name):
                    value = await within_deadline(ctx, work)
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
            return await within_deadline(ctx, handler(ctx))

        return await self._run(context, kind, access, self.policy.middleware, terminal)

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
                if self.auth.before_call:
                    context = await authenticate(context, self.auth.before_call)
                if access.restricted:
                    kind_name = kind.split("/")[0].rstrip("s")
                    await authorize(context, access, kind=kind_name, authenticates=self.auth.anyone)
                if not middleware:
                    result = await terminal(context)
                else:
                    result = await chain(middleware, _serving_each(terminal))(context)
            outcome = "tool_error" if isinstance(result, dict) and result.get("isError") else "success"
            return result
        except Exception as error:
            outcome = call_metrics.outcome_of(error)
            raise
        finally:
            call_metrics.record(self.metrics, kind, name, outcome, started)
