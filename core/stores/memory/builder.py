"""The in-memory backend's builder: every store in this process's memory (one process only)."""

from __future__ import annotations

from stratus.stores.base import StoreOptions, Stores
from stratus.stores.memory.cache import MemoryCacheStore
from stratus.stores.memory.limits import MemoryBreakerStore, MemoryRateLimitStore, SequentialGate
from stratus.stores.memory.sessions import MemorySessionStore
from stratus.stores.memory.streams import MemoryEventLogStore, MemoryPendingRequestStore
from stratus.stores.memory.tasks import MemoryTaskStore
from stratus.stores.urls import StoreUrl


def build(store: StoreUrl, options: StoreOptions) -> Stores:
    """Every store in this process's memory (`memory://` names nothing more; a `StoresBuilder`)."""
    clock = options.clock
    sessions = MemorySessionStore(
        ttl_seconds=options.session_ttl_seconds,
        max_sessions=options.max_sessions,
        max_per_principal=options.max_sessions_per_principal,
        clock=clock,
    )
    rate_limits = MemoryRateLimitStore(clock=clock)
    breakers = MemoryBreakerStore(clock=clock)
    return Stores(
        sessions=sessions,
        rate_limits=rate_limits,
        breakers=breakers,
        events=MemoryEventLogStore(ttl_seconds=options.session_ttl_seconds, clock=clock),
        pending=MemoryPendingRequestStore(clock=clock),
        tasks=MemoryTaskStore(clock=clock),
        cache=MemoryCacheStore(clock=clock),
        gate=SequentialGate(sessions, rate_limits, breakers),
    )
