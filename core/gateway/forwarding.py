"""A request forwarded to the upstream that owns what it names, and the outcome counted.

The upstream's client comes from the container's `UpstreamPool` and runs the request with a `ContextPeer`, so what
the upstream sends meanwhile reaches the caller. An unreachable upstream is a retryable `ToolError` for a tools/call
(its breaker counts it) and an `UpstreamUnavailableCallError` (-32603 naming it) for anything else; a JSON-RPC
error it answers is raised again with its code, message and data (`UpstreamCallError`). Each tools/call is counted
per upstream (`gateway_tool_calls`, `gateway_tool_latency`) and told as a `tool:called` event.
"""

from __future__ import annotations

import logging
import time

from stratus.errors import INTERNAL_ERROR, McpError
from stratus.gateway.event_bus import GatewayEvents
from stratus.gateway.pool import UpstreamPool
from stratus.gateway.proxies import ContextPeer, ListChanged, UpstreamCallError
from stratus.gateway.upstream_client import UpstreamError, UpstreamUnavailableError
from stratus.metrics import MetricsSink
from stratus.server.context import Context
from stratus.server.tools import ToolError
from stratus.types import JsonObject


class UpstreamUnavailableCallError(McpError):
    """A prompt or resource could not be had because its upstream did not answer (tools answer `isError`)."""

    code = INTERNAL_ERROR


class Forwarder:
    """Requests to the pool's upstreams, on behalf of the gateway's callers."""

    def __init__(
        self,
        pool: UpstreamPool,
        events: GatewayEvents,
        on_list_changed: ListChanged,
        metrics: MetricsSink | None = None,
    ) -> None:
        self.pool = pool
        self.events = events
        self.on_list_changed = on_list_changed
        self.metrics = metrics

    async def forward(self, upstream: str, method: str, params: JsonObject, context: Context | None) -> JsonObject:
        """The upstream's result for `method`, what it sends meanwhile passed to `context`'s caller (if any).

        Raises:
            ToolError: a tools/call whose upstream is unavailable (retryable: the breaker counts it).
            UpstreamUnavailableCallError: any other request whose upstream is unavailable.
            UpstreamCallError: the upstream answered a JSON-RPC error.
        """
        started = time.perf_counter()
        success = False
        peer = ContextPeer(upstream, context, self.on_list_changed) if context is not None else None
        async with self.pool.in_flight():
            try:
                client = await self.pool.client(upstream)
                result = await client.request_with_inputs(method, params, peer=peer)
                self.pool.succeeded(upstream)
                success = method != "tools/call" or result.get("isError") is not True
                return result
            except UpstreamUnavailableError as error:
                self.pool.failed(upstream)
                message = f"Upstream {upstream} is unavailable: {error}"
                if method == "tools/call":
                    raise ToolError(message, retryable=True) from None
                raise UpstreamUnavailableCallError(message) from None
            except UpstreamError as error:
                self.pool.succeeded(upstream)  # it answered: the connection works
                raise UpstreamCallError(error.error) from None
            finally:
                if method == "tools/call":
                    sink = context.metrics if context is not None and context.metrics is not None else self.metrics
                    self._called(sink, upstream, params["name"], time.perf_counter() - started, success)

    def _called(self, metrics: MetricsSink | None, upstream: str, tool: str, seconds: float, success: bool) -> None:
        milliseconds = seconds * 1000
        if metrics is not None:
            metrics.count("gateway_tool_calls", upstream=upstream, outcome="success" if success else "failure")
            metrics.latency("gateway_tool_latency", milliseconds, upstream=upstream)
        fields = {"upstream": upstream, "tool": tool, "ms": round(milliseconds, 3), "success": success}
        self.events.emit("tool:called", fields, level=logging.DEBUG)  # one per call: metrics carry it, the log need not
