"""Each upstream's lists (tools, and likewise its prompts, resources and templates), cached in the shared store so
every container answers a list request without asking the upstream: for a TTL (5 minutes by default), until the
upstream says a list changed, or until its configuration changes (the key carries a digest of everything that
decides what the upstream is)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from stratus.gateway.config import Upstream
from stratus.stores.base import CacheStore

TOOLS_TTL_SECONDS = 300.0
KINDS = ("tools", "prompts", "resources", "resourceTemplates")


def config_digest(upstream: Upstream) -> str:
    """A short digest of what the upstream is (transport, address, credentials by reference, process)."""
    identity = [upstream.transport, upstream.url, sorted(upstream.headers.items()), upstream.command, upstream.args]
    identity.append(sorted(upstream.env.items()))
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]


class ToolsCache:
    """Upstreams' tools lists in a `CacheStore` shared by every container."""

    def __init__(self, store: CacheStore, *, ttl_seconds: float = TOOLS_TTL_SECONDS) -> None:
        self.store = store
        self.ttl_seconds = ttl_seconds

    @staticmethod
    def _key(upstream: Upstream, kind: str) -> str:
        return f"gateway:{kind}:{upstream.name}:{config_digest(upstream)}"

    async def get(self, upstream: Upstream, kind: str = "tools") -> list[dict[str, Any]] | None:
        """The cached list of `kind` of `upstream` as it is configured now, or None."""
        cached = await self.store.get(self._key(upstream, kind))
        return None if cached is None else list(json.loads(cached))

    async def put(self, upstream: Upstream, items: list[dict[str, Any]], kind: str = "tools") -> None:
        value = json.dumps(items, separators=(",", ":"))
        await self.store.set(self._key(upstream, kind), value, self.ttl_seconds)

    async def invalidate(self, upstream: Upstream, kinds: tuple[str, ...] = KINDS) -> None:
        """Forget the lists (the upstream sent a `notifications/*/list_changed`, or it was reconfigured)."""
        for kind in kinds:
            await self.store.delete(self._key(upstream, kind))
