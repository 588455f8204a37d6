"""Each upstream's tools list, cached in the shared store so every container answers tools/list without asking
the upstream: for a TTL (5 minutes by default), until the upstream says its list changed, or until its
configuration changes (the key carries a digest of everything that decides what the upstream is)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core.gateway.config import Upstream
from core.stores.extras import CacheStore

TOOLS_TTL_SECONDS = 300.0


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

    def _key(self, upstream: Upstream) -> str:
        return f"gateway:tools:{upstream.name}:{config_digest(upstream)}"

    async def get(self, upstream: Upstream) -> list[dict[str, Any]] | None:
        """The cached tools of `upstream` as it is configured now, or None."""
        cached = await self.store.get(self._key(upstream))
        return None if cached is None else list(json.loads(cached))

    async def put(self, upstream: Upstream, tools: list[dict[str, Any]]) -> None:
        await self.store.set(self._key(upstream), json.dumps(tools, separators=(",", ":")), self.ttl_seconds)

    async def invalidate(self, upstream: Upstream) -> None:
        """Forget the list (the upstream sent `notifications/tools/list_changed`)."""
        await self.store.delete(self._key(upstream))
