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

The catalog's reading and building is core/gateway/catalog.py, the forwarding of calls
core/gateway/forwarding.py, the subscriptions passed on core/gateway/upstream_subscriptions.py, `/health`'s
report core/gateway/upstream_health.py and the events told to `listeners` core/gateway/event_bus.py.

A client's resource subscription (`resources/subscribe`, or a `subscriptions/listen` filter) is held to what a read
of its URI would allow, like any server's (core/protocol/reads.py): a URI no upstream owns (`owner_of`, once the
catalog was rebuilt for it) is refused, or left out of a listen's acknowledged filter. It is passed on to the
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
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from stratus.errors import StoreUnavailableError
from stratus.gateway.catalog import CATALOG_SECONDS, Catalog, build_catalog, read_offers
from stratus.gateway.config import GatewayConfigError, Upstream
from stratus.gateway.event_bus import GatewayEvents
from stratus.gateway.forwarding import Forwarder
from stratus.gateway.list_cache import TOOLS_TTL_SECONDS, ToolsCache
from stratus.gateway.pool import UpstreamPool, open_client
from stratus.gateway.proxies import ProxyPrompt, ProxyTemplate
from stratus.gateway.registry import UpstreamRegistry
from stratus.gateway.upstream_client import UpstreamClient, UpstreamUnavailableError
from stratus.gateway.upstream_health import describe_upstreams
from stratus.gateway.upstream_subscriptions import owner_of, pass_on, withdraw
from stratus.metrics import MetricsSink
from stratus.net.addresses import AddressGuard, Resolver, parse_allowed_networks, system_resolver
from stratus.protocol.notifications import NotificationLog
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.server.policy import ToolPolicy
from stratus.server.server import McpServer
from stratus.stores.base import CacheStore, Stores
from stratus.types import JsonObject

logger = logging.getLogger("stratus.gateway")

UPSTREAM_BREAKER = BreakerPolicy(failure_threshold=5, window_seconds=60.0, cooldown_seconds=30.0)


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
        self.events = GatewayEvents()
        self.listeners = self.events.listeners
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
            on_state=self.events.state_changed,
            on_change=self.list_changed if watch else None,
            on_update=self.resource_updated if watch else None,
            clock=clock,
        )
        self.forwarder = Forwarder(self.pool, self.events, self.list_changed, metrics)
        self.upstream_breaker = breaker
        self.upstream_rate_limit = rate_limit
        self.cache_ttl = cache_ttl
        self.catalog_seconds = catalog_seconds
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
        if method in ("resources/read", "resources/subscribe"):
            return owner_of(str(params.get("uri")), self.resources, self.templates) is None
        if method == "subscriptions/listen":
            notifications = params.get("notifications")
            uris = notifications.get("resourceSubscriptions") if isinstance(notifications, dict) else None
            return isinstance(uris, list) and any(
                owner_of(str(uri), self.resources, self.templates) is None for uri in uris
            )
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
        self.events.emit("servers:changed", {"upstreams": len(self.configured) + len(recorded)})

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
        offers, failures = await read_offers(self.pool, cache)
        self._install(build_catalog(offers, self._policy, self.forwarder.forward))
        self.failures = failures
        self._built_at = self._clock() if not failures else self._clock() - self.catalog_seconds + 1.0

    def _install(self, catalog: Catalog) -> None:
        before = set(self.tools), set(self.prompts), set(self.resources), set(self.templates)
        self.tools, self.prompts = catalog.tools, catalog.prompts
        self.resources, self.templates = catalog.resources, catalog.templates
        for note in sorted(set(catalog.renamed) - set(self.renamed)):  # once per container, not per rebuild
            logger.warning("gateway tool renamed", extra={"renamed": note})
        self.renamed, self.tool_counts = catalog.renamed, catalog.tool_counts
        after = set(self.tools), set(self.prompts), set(self.resources), set(self.templates)
        if self._built_at is not None and before != after:
            self.events.emit("servers:changed", {"tools": len(self.tools), "prompts": len(self.prompts)})

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

    # -- what the upstreams say ------------------------------------------------------------------------------

    async def list_changed(self, upstream: str, kind: str) -> None:
        """An upstream said a list changed: forget it everywhere, rebuild here on the next request, and tell the
        gateway's own listening clients."""
        found = next((each for each in self.pool.upstreams if each.name == upstream), None)
        self._built_at = None
        self.events.emit("list:changed", {"upstream": upstream, "kind": kind})
        try:
            if found is not None and self._cache is not None:
                kinds = ("resources", "resourceTemplates") if kind == "resources" else (kind,)
                await self._cache.invalidate(found, kinds)
            if self._notices is not None:
                await self._notices.publish(f"notifications/{kind}/list_changed", {})
        except StoreUnavailableError:
            logger.warning("a list change could not be shared: the store is unavailable", extra={"upstream": upstream})

    async def resource_updated(self, upstream: str, uri: str) -> None:
        """An upstream said a subscribed resource changed: publish it for the subscribed sessions on every
        container (each session's stream relays only the URIs it subscribed to)."""
        self.events.emit("resource:updated", {"upstream": upstream, "uri": uri}, level=logging.DEBUG)
        if self._notices is None:
            return
        try:
            await self._notices.publish("notifications/resources/updated", {"uri": uri})
        except StoreUnavailableError:
            logger.warning(
                "a resource update could not be shared: the store is unavailable", extra={"upstream": upstream}
            )

    # -- what the clients ask --------------------------------------------------------------------------------

    async def subscribed(self, uri: str) -> None:
        """Pass a client's subscription on to the upstream that owns `uri` (core/gateway/upstream_subscriptions.py).

        Raises:
            UpstreamCallError: the upstream refused it (its error, unchanged).
            UpstreamUnavailableCallError: the upstream did not answer (or acknowledge in time).
        """
        owner = owner_of(uri, self.resources, self.templates)
        if owner is not None:
            await pass_on(self.pool, self.forwarder.forward, owner, uri, self.upstream_timeout)

    async def unsubscribed(self, uri: str) -> None:
        withdraw(self.pool, uri)

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
        result = await self.forwarder.forward(owner.upstream, "completion/complete", params, None)
        completion = result.get("completion")
        return completion if isinstance(completion, dict) else {"values": []}

    def health(self) -> JsonObject:
        """Each upstream as this container knows it (core/gateway/upstream_health.py)."""
        return describe_upstreams(self.pool, self.failures, self.tool_counts)

    async def aclose(self) -> None:
        """Wait for the calls in flight (up to 10 s), then close every upstream connection."""
        await self.pool.aclose(within=10.0)
