"""Small shared values with a time to live, and claims, in a dict."""

from __future__ import annotations

import time

from stratus.resilience.deadline import Clock


class MemoryCacheStore:
    """Values in a dict with their expiry."""

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._values: dict[str, tuple[str, float]] = {}
        self._clock = clock

    async def get(self, key: str) -> str | None:
        entry = self._values.get(key)
        return entry[0] if entry is not None and entry[1] > self._clock() else None

    async def set(self, key: str, value: str, ttl_seconds: float) -> None:
        self._values[key] = (value, self._clock() + ttl_seconds)

    async def delete(self, key: str) -> None:
        self._values.pop(key, None)

    async def claim(self, key: str, ttl_seconds: float) -> bool:
        if await self.get(key) is not None:
            return False
        await self.set(key, "1", ttl_seconds)
        return True
