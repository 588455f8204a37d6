"""Small shared values with a time to live, and claims, as Redis keys."""

from __future__ import annotations

import time

from stratus.resilience.deadline import Clock
from stratus.stores.redis.scripts import GRACE_SECONDS, RedisScripts, as_text, new_token


class RedisCacheStore:
    """Values stored with their expiry (compared on read); the key's TTL only collects garbage."""

    def __init__(self, scripts: RedisScripts, *, clock: Clock = time.time) -> None:
        self.scripts = scripts
        self.clock = clock

    async def get(self, key: str) -> str | None:
        stored = await self.scripts.command("get", self.scripts.key(f"c:{key}"))
        if stored is None:
            return None
        expires, _, value = as_text(stored).partition("|")
        return value if float(expires) > self.clock() else None

    async def set(self, key: str, value: str, ttl_seconds: float) -> None:
        stored = f"{self.clock() + ttl_seconds!r}|{value}"
        await self.scripts.command(
            "set", self.scripts.key(f"c:{key}"), stored, px=int((ttl_seconds + GRACE_SECONDS) * 1000)
        )

    async def delete(self, key: str) -> None:
        await self.scripts.command("delete", self.scripts.key(f"c:{key}"))

    async def claim(self, key: str, ttl_seconds: float) -> bool:
        args = [repr(self.clock()), ttl_seconds, GRACE_SECONDS, new_token()]
        return bool(int(await self.scripts.run("cache_claim", [self.scripts.key(f"c:{key}")], args)))
