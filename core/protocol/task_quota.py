"""Caps on running tasks: per principal across every container (in the store), and per process (in memory).

A live task (`working` or `input_required`) holds one place of its principal's quota
(`STRATUS_MAX_TASKS_PER_PRINCIPAL`) until it ends: completed, failed or cancelled (whoever moves it there frees the
place), or expired (the place is a cache key that expires with the task). The places are `quota` keys per principal,
each claimed atomically with `CacheStore.claim`, so the count holds across containers and bounds the asynchronous
invocations the task worker (`STRATUS_TASK_WORKER`) starts for one caller, wherever they are created; a claim starts
at a random place, so the first one usually succeeds. Anonymous callers (auth off) are told apart by their source
address as the front door saw it (`HttpRequest.source_address`: the trusted request context's `sourceIp`, never a
header the client writes; an IPv6 address by its /64, which one host usually holds whole), each with a quota of its
own, so one caller cannot take every anonymous place; the tasks they create live at most
`STRATUS_ANONYMOUS_TASK_TTL_SECONDS`, which bounds how long a place held waiting for input lasts.

Tasks run in this process (`InProcessLauncher`) are also capped in all (`STRATUS_MAX_TASKS`), counted in memory
like the streams of `stratus.resilience.stream_slots`: the process's own memory and event loop are what they use.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from typing import TYPE_CHECKING

from stratus.errors import TooManyTasksError

if TYPE_CHECKING:
    from stratus.stores.base import CacheStore

PER_PRINCIPAL_SETTING = "STRATUS_MAX_TASKS_PER_PRINCIPAL"
TOTAL_SETTING = "STRATUS_MAX_TASKS"
ANONYMOUS = "anonymous:"
"""The start of an anonymous caller's quota holder, followed by its source address."""


def quota_holder(principal: str | None, source_address: str | None) -> str:
    """Whose places a new task takes: its principal's, else its anonymous caller's source address (its /64 for
    IPv6); callers with no known address share one."""
    if principal is not None:
        return principal
    try:
        address = ipaddress.ip_address(source_address or "")
    except ValueError:
        return f"{ANONYMOUS}unknown"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return f"{ANONYMOUS}{address.ipv4_mapped}"
        return f"{ANONYMOUS}{ipaddress.IPv6Network((address, 64), strict=False)}"
    return f"{ANONYMOUS}{address}"


def refuse_principal(quota: int, holder: str = "") -> TooManyTasksError:
    who = "address" if holder.startswith(ANONYMOUS) else "principal"
    return TooManyTasksError(
        f"Too many running tasks for this {who} ({quota}); wait for one to end or cancel one, or raise "
        f"{PER_PRINCIPAL_SETTING}",
        setting=PER_PRINCIPAL_SETTING,
        limit=quota,
        busy=False,
    )


def refuse_process(total: int) -> TooManyTasksError:
    return TooManyTasksError(
        f"This server runs its maximum of tasks ({total}); retry later, or raise {TOTAL_SETTING}",
        setting=TOTAL_SETTING,
        limit=total,
        busy=True,
    )


class PrincipalTaskQuota:
    """The places of each principal's live tasks, kept in the shared cache store (0: no quota)."""

    def __init__(self, cache: CacheStore, quota: int) -> None:
        self.cache = cache
        self.quota = quota

    async def take(self, holder: str, ttl_seconds: float) -> str | None:
        """The key of the place taken for this task in `holder`'s quota (`quota_holder`; None when there is no
        quota).

        Raises:
            TooManyTasksError: the holder's live tasks hold every place (429, naming the setting).
        """
        if not self.quota:
            return None
        owner = hashlib.sha256(holder.encode()).hexdigest()[:32]
        start = secrets.randbelow(self.quota)
        for step in range(self.quota):
            key = f"tasks:running:{owner}:{(start + step) % self.quota}"
            if await self.cache.claim(key, ttl_seconds):
                return key
        raise refuse_principal(self.quota, holder)

    async def give_back(self, place: str | None) -> None:
        """Free a place once its task has ended (moved to a terminal status by the caller)."""
        if place is not None:
            await self.cache.delete(place)
