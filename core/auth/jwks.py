"""A JWKS fetched once per container, kept across warm invocations, refreshed when a token names an unknown key."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

JsonObject = dict[str, Any]
Fetch = Callable[[str], Awaitable[JsonObject]]


class JwksUnavailableError(Exception):
    """The key set could not be fetched or parsed."""


FETCH_TIMEOUT_SECONDS = 3.0


async def fetch_over_https(url: str) -> JsonObject:
    """GET the key set with a bounded socket timeout, off the event loop."""

    def get() -> JsonObject:
        request = urllib.request.Request(url, headers={"accept": "application/json"})  # noqa: S310 - URL from settings
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_SECONDS) as response:  # noqa: S310
            document: JsonObject = json.loads(response.read(1_000_000))
            return document

    try:
        return await asyncio.to_thread(get)
    except (OSError, ValueError) as error:
        raise JwksUnavailableError(f"could not fetch the JWKS from {url}") from error


class KeySet:
    """Signing keys by `kid`. An unknown `kid` triggers at most one refetch per `refresh_interval` seconds."""

    def __init__(
        self,
        url: str,
        *,
        fetch: Fetch = fetch_over_https,
        refresh_interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self._fetch = fetch
        self._refresh_interval = refresh_interval
        self._clock = clock
        self._keys: dict[str, JsonObject] = {}
        self._fetched_at: float | None = None
        self.fetches = 0

    async def key(self, kid: str | None) -> JsonObject | None:
        """The JWK with this id (or the only key, when the token names none); None when it is not in the set."""
        if self._fetched_at is None:
            await self._refresh()
        found = self._find(kid)
        if (
            found is None
            and self._fetched_at is not None
            and self._clock() - self._fetched_at >= self._refresh_interval
        ):
            await self._refresh()
            found = self._find(kid)
        return found

    def _find(self, kid: str | None) -> JsonObject | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh(self) -> None:
        document = await self._fetch(self.url)
        self.fetches += 1
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise JwksUnavailableError(f"{self.url} is not a JWKS document")
        self._keys = {
            str(key.get("kid")): key for key in keys if isinstance(key, dict) and key.get("use", "sig") == "sig"
        }
        self._fetched_at = self._clock()
