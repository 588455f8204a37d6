"""`GatewayServer`: an `McpServer` whose tools, prompts, resources and templates are those of its upstreams.

Its upstreams are the configured ones (the `mcpServers` file) and those recorded in the store
(core/gateway/registry.py), re-read with every rebuild: a recorded upstream that was added, changed or removed is
connected, reconnected or dropped. Before each request the dispatcher lets it `refresh`: the container's catalog
is rebuilt from the upstreams' lists in the shared cache (each fetched from its upstream only when the cache
misses) once it is older than `catalog_seconds`, at once when a call names something the catalog lacks (at most
once a second), and whenever an upstream says a list changed. A failing upstream offers nothing until it answers
again; the others are served.

Calls go through the same pipeline as local tools; each upstream's tools share one circuit breaker and one rate
limit (`group` = `upstream:{name}`). An unreachable upstream is a failure for its breaker and an `isError` result
naming it; a JSON-RPC error it answers reaches the client with its code, message and data.

Events (`server:connected`, `connection:state`, `servers:changed`, `tool:called` with duration and success) go
to the listeners and to the `stratus.gateway` logger; `gateway_tool_calls` and `gateway_tool_latency` are counted
per upstream.

A client's resource subscription (`resources/subscribe`, or a `subscriptions/listen` filter) is passed on to the
upstream that owns the resource when it takes subscriptions: a handshake-era one is sent `resources/subscribe` on
this container's session; a 2026-07-28 one is asked for the URI by this container's `subscriptions/listen`
stream, reopened with the new filter (the subscription is answered once the upstream acknowledged it). Either
way the upstream's `notifications/resources/updated` (heard while a call runs, or by the connection's watcher in
a long-lived process) is published to the shared notification log, so the subscribed session's stream relays it
on whichever container holds it. A handshake-era upstream's subscriptions are never withdrawn (other sessions,
on other containers, may share them): streams filter per session. A 2026-07-28 upstream stops being asked for a
URI once every subscription this container passed on for it is withdrawn here (`resources/unsubscribe`, or the
end of the `subscriptions/listen` that asked).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from stratus.errors import INTERNAL_ERROR, McpError, StoreUnavailableError
from stratus.gateway.addresses import AddressGuard, Resolver, parse_allowed_networks, system_resolver
from stratus.gateway.aggregate import aggregate_tools
from stratus.gateway.config import GatewayConfigError, Upstream
from stratus.gateway.connection import ConnectionState
from stratus.gateway.list_cache import KINDS, TOOLS_TTL_SECONDS, ToolsCache
from stratus.gateway.operations import discover
from stratus.gateway.pool import UpstreamPool, open_client
from stratus.gateway.proxies import ContextPeer, ProxyPrompt, ProxyResource, ProxyTemplate, ProxyTool, UpstreamCallError
from stratus.gateway.registry import UpstreamRegistry
from stratus.gateway.upstream_client import UpstreamClient, UpstreamError, UpstreamUnavailableError
from stratus.metrics import MetricsSink
from stratus.protocol.notifications import NotificationLog
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.server.context import Context
from stratus.server.policy import ToolPolicy
from stratus.server.server import McpServer
from stratus.server.tools import ToolError
from stratus.stores.base import CacheStore, Stores
from stratus.types import JsonObject

logger = logging.getLogger("stratus.gateway")
T = TypeVar("T")

EventListener = Callable[[str, JsonObject], None]
CATALOG_SECONDS = 5.0
HEALTH_UPSTREAMS = 50
"""At most this many upstreams are described on `/health` (the rest are counted), so its answer stays small."""
HEALTH_ERROR_CHARS = 200
UPSTREAM_BREAKER = BreakerPolicy(failure_threshold=5, window_seconds=60.0, cooldown_seconds=30.0)


class UpstreamUnavailableCallError(McpError):
    """A prompt or resource could not be had because its upstream did not answer (tools answer `isError`)."""

    code = INTERNAL_ERROR


class GatewayServer(McpServer):
    """The upstreams' offer served as one MCP server."""

    dynamic = True

    def __init__(
        self,
        upstreams: Iterable[Upstream],
        name: str = "stratus-gateway",
        *,
        pool: UpstreamPool | None = None,
        use_records: bool = True,
        upstream_timeout: float = 30.0,
        watch: bool = True,
        resolve: Callable[[str], str] | None = None,
        allowed_networks: Sequence[str] = (),
        address_resolver: Resolver = system_resolver,
        breaker: BreakerPolicy | None = UPSTREAM_BREAKER,
        rate_limit: RateLimit | None = None,
        cache_ttl: float = TOOLS_TTL_SECONDS,
        catalog_seconds: float = CATALOG_SECONDS,
        metrics: MetricsSink | None = None,
        clock: Callable[[], float] = time.monotonic,
        **server: Any,
    ) -> None:
        super().__init__(name, **server)
        self.listeners: list[EventListener] = []
        self.configured = list(upstreams)
        self.use_records = use_records
        self.upstream_timeout = upstream_timeout
        self._records_version = 0
        self.resolve = resolve
        self.allowed_networks = parse_allowed_networks(",".join(allowed_networks))
        self.guard = AddressGuard(self.allowed_networks, address_resolver)
        """Checks the addresses of every connection to an HTTP upstream, as it is opened (SSRF, DNS rebinding)."""
        self.pool = pool or UpstreamPool(
            self.configured,
            opener=self._open,
            on_state=self._state_changed,
            on_change=self.list_changed if watch else None,
            on_update=self.resource_updated if watch else None,
            clock=clock,
        )
        self.upstream_breaker = breaker
        self.upstream_rate_limit = rate_limit
        self.cache_ttl = cache_ttl
        self.catalog_seconds = catalog_seconds
        self.metrics = metrics
        self._clock = clock
        self._built_at: float | None = None
        self._missed_at = -1.0
        self._lock = asyncio.Lock()
        self._cache: ToolsCache | None = None
        self._notices: NotificationLog | None = None
        self.renamed: tuple[str, ...] = ()
        self.failures: dict[str, str] = {}
        """Upstreams left out of the catalog at its last rebuild, with the reason."""
        self.tool_counts: dict[str, int] = {}
        """How many tools each upstream offers in the catalog."""

    # -- the catalog -----------------------------------------------------------------------------------------

    async def refresh(self, stores: Stores, method: str, params: JsonObject) -> None:
        cache = stores.cache
        now = self._clock()
        stale = self._built_at is None or now - self._built_at >= self.catalog_seconds
        if not stale and self._misses(method, params) and now - self._missed_at >= 1.0:
            self._missed_at, stale = now, True
        if self._cache is None or self._cache.store is not cache:
            self._cache = ToolsCache(cache, ttl_seconds=self.cache_ttl)
            self._notices = NotificationLog(stores.events)
        if stale:
            async with self._lock:
                if self._built_at is None or self._built_at < now:
                    await self._rebuild(self._cache)

    def _misses(self, method: str, params: JsonObject) -> bool:
        if method == "tools/call":
            return params.get("name") not in self.tools
        if method == "prompts/get":
            return params.get("name") not in self.prompts
        if method == "resources/read":
            uri = params.get("uri")
            return uri not in self.resources and not any(t.match(str(uri)) for t in self.templates.values())
        return False

    async def _take_records(self, store: CacheStore) -> None:
        """Serve the upstreams recorded in the store beside the configured ones, when the records changed."""
        configured = {upstream.name for upstream in self.configured}
        snapshot = await UpstreamRegistry(store, reserved=configured).snapshot()
        if snapshot.version == self._records_version:
            return
        recorded = [upstream for upstream in snapshot.upstreams if upstream.name not in configured]
        await self.pool.replace([*self.configured, *recorded])
        self._records_version = snapshot.version
        self._emit("servers:changed", {"upstreams": len(self.configured) + len(recorded)})

    async def _rebuild(self, cache: ToolsCache) -> None:
        if self.use_records:
            try:
                await self._take_records(cache.store)
            except GatewayConfigError as error:
                logger.error(
                    "the recorded upstreams are invalid; serving the previous set", extra={"reason": str(error)}
                )
            except StoreUnavailableError:
                logger.warning("the store is unavailable: serving the upstreams recorded when it last answered")
        offers: list[tuple[Upstream, dict[str, list[JsonObject]]]] = []
        failures: dict[str, str] = {}
        for upstream in self.pool.upstreams:
            if not upstream.active:
                continue
            try:
                offers.append((upstream, await self._offer(upstream, cache, failures)))
            except (UpstreamError, UpstreamUnavailableError) as error:
                failures[upstream.name] = str(error)
                logger.warning(
                    "upstream left out of the catalog", extra={"upstream": upstream.name, "reason": str(error)}
                )
        self._install(offers)
        self.failures = failures
        self._built_at = self._clock() if not failures else self._clock() - self.catalog_seconds + 1.0

    async def _offer(
        self, upstream: Upstream, cache: ToolsCache, failures: dict[str, str]
    ) -> dict[str, list[JsonObject]]:
        """The upstream's lists, from the shared cache, else discovered from the upstream and cached. Its tools are
        required; an optional list that fails is served empty and reported in `failures` (as `upstream/kind`), not
        cached, so it is asked again next time.

        Raises:
            UpstreamError, UpstreamUnavailableError: the tools could not be listed.
        """
        cached = {kind: await _unless_unavailable(cache.get(upstream, kind)) for kind in KINDS}
        if all(items is not None for items in cached.values()):
            return {kind: items or [] for kind, items in cached.items()}
        found = await discover(await self.pool.client(upstream.name))
        for kind, reason in found.failures.items():
            failures[f"{upstream.name}/{kind}"] = reason
        lists = found.lists()
        for kind, items in lists.items():
            if kind not in found.failures:
                await _unless_unavailable(cache.put(upstream, items, kind))
        return lists

    def _install(self, offers: list[tuple[Upstream, dict[str, list[JsonObject]]]]) -> None:
        before = set(self.tools), set(self.prompts), set(self.resources), set(self.templates)
        tools = aggregate_tools([(upstream, offer["tools"]) for upstream, offer in offers])
        self.tools = {
            routed.name: ProxyTool(routed, self._policy(routed.upstream), self._forward) for routed in tools.tools
        }
        prompts = aggregate_tools([(upstream, offer["prompts"]) for upstream, offer in offers], hide_disabled=False)
        self.prompts = {
            routed.name: ProxyPrompt(routed.upstream, routed.original, routed.definition, self._forward)
            for routed in prompts.tools
        }
        self.resources, self.templates = {}, {}
        for upstream, offer in offers:
            for definition in offer["resources"]:
                if isinstance(definition.get("uri"), str):
                    self.resources.setdefault(
                        definition["uri"], ProxyResource(upstream.name, definition, self._forward)
                    )
            for definition in offer["resourceTemplates"]:
                if isinstance(definition.get("uriTemplate"), str):
                    try:
                        template = ProxyTemplate(upstream.name, definition, self._forward)
                    except ValueError:
                        continue  # a template form the gateway cannot match: listed by its upstream only
                    self.templates.setdefault(template.uri_template, template)
        self.renamed = tools.renamed + prompts.renamed
        self.tool_counts = {}
        for routed in tools.tools:
            self.tool_counts[routed.upstream] = self.tool_counts.get(routed.upstream, 0) + 1
        after = set(self.tools), set(self.prompts), set(self.resources), set(self.templates)
        if self._built_at is not None and before != after:
            self._emit("servers:changed", {"tools": len(self.tools), "prompts": len(self.prompts)})

    async def _open(self, upstream: Upstream) -> UpstreamClient:
        """Connect to an upstream with its secrets resolved (never kept in the configuration or the cache); every
        connection it opens is checked against the guard as it is made, the first one included."""
        if self.resolve is not None:
            try:
                upstream = dataclasses.replace(
                    upstream,
                    headers={name: self.resolve(value) for name, value in upstream.headers.items()},
                    env={name: self.resolve(value) for name, value in upstream.env.items()},
                )
            except ValueError as error:
                raise UpstreamUnavailableError(f"{upstream.name}: {error}") from None
        return await open_client(upstream, request_seconds=self.upstream_timeout, guard=self.guard)

    def _policy(self, upstream: str) -> ToolPolicy:
        return ToolPolicy(
            breaker=self.upstream_breaker, rate_limit=self.upstream_rate_limit, group=f"upstream:{upstream}"
        )

    async def list_changed(self, upstream: str, kind: str) -> None:
        """An upstream said a list changed: forget it everywhere, rebuild here on the next request, and tell the
        gateway's own listening clients."""
        found = next((each for each in self.pool.upstreams if each.name == upstream), None)
        self._built_at = None
        self._emit("list:changed", {"upstream": upstream, "kind": kind})
        try:
            if found is not None and self._cache is not None:
                kinds = ("resources", "resourceTemplates") if kind == "resources" else (kind,)
                await self._cache.invalidate(found, kinds)
            if self._notices is not None:
                await self._notices.publish(f"notifications/{kind}/list_changed", {})
        except StoreUnavailableError:
            logger.warning("a list change could not be shared: the store is unavailable", extra={"upstream": upstream})

    # -- resource subscriptions ------------------------------------------------------------------------------

    async def subscribed(self, uri: str) -> None:
        """Pass a client's subscription on to the upstream that owns `uri`, when that upstream takes subscriptions:
        a 2026-07-28 upstream once its listen stream acknowledged the URI (when connections are watched).

        Raises:
            UpstreamCallError: the upstream refused it (its error, unchanged).
            UpstreamUnavailableCallError: the upstream did not answer (or acknowledge in time).
        """
        owner = self._owner(uri)
        if owner is None:
            return
        try:
            client = await self.pool.client(owner)
        except UpstreamUnavailableError as error:
            raise UpstreamUnavailableCallError(f"Upstream {owner} is unavailable: {error}") from None
        offered = client.capabilities.get("resources")
        if not isinstance(offered, dict) or offered.get("subscribe") is not True:
            return  # it announces no updates: the subscription is kept here only
        if not client.stateless:
            await self._forward(owner, "resources/subscribe", {"uri": uri}, None)
        elif self.pool.watching:
            await self._listen_for(owner, uri)

    async def _listen_for(self, owner: str, uri: str) -> None:
        interest = self.pool.interest(owner)
        version = interest.add(uri)
        try:
            async with asyncio.timeout(self.upstream_timeout):
                await interest.settled(version)
        except BaseException as error:  # not passed on after all (timed out, or its caller went away)
            interest.remove(uri)
            if isinstance(error, TimeoutError):
                raise UpstreamUnavailableCallError(
                    f"Upstream {owner} did not acknowledge the subscription within {self.upstream_timeout:g} s"
                ) from None
            raise

    async def unsubscribed(self, uri: str) -> None:
        """A subscription this container passed on was withdrawn: its 2026-07-28 upstream stops being asked for
        `uri` once none is left here."""
        for upstream in self.pool.upstreams:
            self.pool.interest(upstream.name).remove(uri)

    def _owner(self, uri: str) -> str | None:
        resource = self.resources.get(uri)
        if isinstance(resource, ProxyResource):
            return resource.upstream
        template = next((each for each in self.templates.values() if each.match(uri)), None)
        return template.upstream if isinstance(template, ProxyTemplate) else None

    async def resource_updated(self, upstream: str, uri: str) -> None:
        """An upstream said a subscribed resource changed: publish it for the subscribed sessions on every
        container (each session's stream relays only the URIs it subscribed to)."""
        self._emit("resource:updated", {"upstream": upstream, "uri": uri}, level=logging.DEBUG)
        if self._notices is None:
            return
        try:
            await self._notices.publish("notifications/resources/updated", {"uri": uri})
        except StoreUnavailableError:
            logger.warning(
                "a resource update could not be shared: the store is unavailable", extra={"upstream": upstream}
            )

    # -- calls -----------------------------------------------------------------------------------------------

    async def _forward(self, upstream: str, method: str, params: JsonObject, context: Context | None) -> JsonObject:
        """The upstream's result for `method`, what it sends meanwhile passed to `context`'s caller (if any).

        Raises:
            ToolError: a tools/call whose upstream is unavailable (retryable: the breaker counts it).
            UpstreamUnavailableCallError: any other request whose upstream is unavailable.
            UpstreamCallError: the upstream answered a JSON-RPC error.
        """
        started = time.perf_counter()
        success = False
        peer = ContextPeer(upstream, context, self.list_changed) if context is not None else None
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
                    self._called(upstream, params["name"], time.perf_counter() - started, success)

    def _called(self, upstream: str, tool: str, seconds: float, success: bool) -> None:
        milliseconds = seconds * 1000
        if self.metrics is not None:
            self.metrics.count("gateway_tool_calls", upstream=upstream, outcome="success" if success else "failure")
            self.metrics.latency("gateway_tool_latency", milliseconds, upstream=upstream)
        fields = {"upstream": upstream, "tool": tool, "ms": round(milliseconds, 3), "success": success}
        self._emit("tool:called", fields, level=logging.DEBUG)  # one per call: metrics carry it, the log need not

    async def complete(
        self, ref_type: str, ref_name: str, argument: str, value: str, context: dict[str, str]
    ) -> JsonObject:
        owner = self.prompts.get(ref_name) if ref_type == "ref/prompt" else self.templates.get(ref_name)
        if not isinstance(owner, ProxyPrompt | ProxyTemplate):
            return await super().complete(ref_type, ref_name, argument, value, context)
        ref = (
            {"type": "ref/prompt", "name": owner.original}
            if isinstance(owner, ProxyPrompt)
            else {"type": ref_type, "uri": ref_name}
        )
        params: JsonObject = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        result = await self._forward(owner.upstream, "completion/complete", params, None)
        completion = result.get("completion")
        return completion if isinstance(completion, dict) else {"values": []}

    # -- health ----------------------------------------------------------------------------------------------

    def health(self) -> JsonObject:
        """Each upstream as this container knows it (connection state, last error, tools in the catalog): read
        from memory, never by connecting, so `/health` stays as quick and cheap as without a gateway. Bounded: at
        most HEALTH_UPSTREAMS upstreams, each error cut to HEALTH_ERROR_CHARS."""
        upstreams = self.pool.upstreams
        described: list[JsonObject] = []
        for upstream in upstreams[:HEALTH_UPSTREAMS]:
            error = self.pool.last_error(upstream.name) or self.failures.get(upstream.name)
            described.append(
                {
                    "name": upstream.name,
                    "state": self.pool.state(upstream.name).value if upstream.active else "inactive",
                    "lastError": error[:HEALTH_ERROR_CHARS] if error else None,
                    "tools": self.tool_counts.get(upstream.name, 0),
                }
            )
        report: JsonObject = {"upstreams": described}
        if len(upstreams) > HEALTH_UPSTREAMS:
            report["upstreamsNotShown"] = len(upstreams) - HEALTH_UPSTREAMS
        return report

    # -- events ----------------------------------------------------------------------------------------------

    def _state_changed(self, upstream: str, old: ConnectionState, new: ConnectionState) -> None:
        self._emit("connection:state", {"upstream": upstream, "from": old.value, "to": new.value})
        if new is ConnectionState.CONNECTED:
            self._emit("server:connected", {"upstream": upstream})

    def _emit(self, event: str, fields: JsonObject, *, level: int = logging.INFO) -> None:
        if logger.isEnabledFor(level):
            extra = {"gateway_event": event, **{f"gateway_{key}": value for key, value in fields.items()}}
            logger.log(level, event, extra=extra)
        for listener in self.listeners:
            listener(event, fields)

    def attach(self, metrics: MetricsSink) -> None:
        if self.metrics is None:
            self.metrics = metrics

    async def aclose(self) -> None:
        """Wait for the calls in flight (up to 10 s), then close every upstream connection."""
        await self.pool.aclose(within=10.0)


async def _unless_unavailable(step: Awaitable[T]) -> T | None:
    """The store's answer, or None while it is unavailable: the lists are then asked of the upstreams themselves."""
    try:
        return await step
    except StoreUnavailableError:
        logger.warning("the store is unavailable: the gateway's lists bypass the cache")
        return None
