"""A JWKS fetched once per container, kept across warm invocations, refreshed when a token names an unknown key.

Anyone can send a token naming a made-up `kid`, so refreshes are rationed (see `KeySet`), and the fetch runs on
a thread of its own: a slow issuer holds at most that one thread, never the event loop's default executor that
other blocking calls share.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
import urllib.request
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from http.client import HTTPException

from stratus.types import JsonObject

Fetch = Callable[[str], Awaitable[JsonObject]]

FETCH_TIMEOUT_SECONDS = 3.0
REFRESH_INTERVAL_SECONDS = 60.0
FAILURE_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 300.0

logger = logging.getLogger("stratus.auth")


class JwksUnavailableError(Exception):
    """The key set could not be fetched or parsed."""


@cache
def _fetch_thread() -> ThreadPoolExecutor:
    """The one thread JWKS fetches run on (made on first use; `KeySet` never runs two fetches at once)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="stratus-jwks")


async def fetch_over_https(url: str) -> JsonObject:
    """GET the key set with a bounded socket timeout, on the JWKS thread."""

    def get() -> JsonObject:
        request = urllib.request.Request(url, headers={"accept": "application/json"})  # noqa: S310 - URL from settings
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_SECONDS) as response:  # noqa: S310
            document: JsonObject = json.loads(response.read(1_000_000))
            return document

    try:
        return await asyncio.get_running_loop().run_in_executor(_fetch_thread(), get)
    except (OSError, ValueError, HTTPException) as error:
        raise JwksUnavailableError(f"could not fetch the JWKS from {url}") from error


class KeySet:
    """Signing keys by `kid`, fetched on first use and refreshed when a token names a key not in the set.

    Refreshes are rationed:
    - one fetch at a time: requests needing a refresh while one is under way wait for that one;
    - after a fetch, a `kid` still unknown is refused without another fetch for `refresh_interval` seconds;
    - a failed fetch is remembered: no new attempt for `failure_backoff` seconds, doubling with each failure in a
      row up to `max_backoff`. Meanwhile unknown kids are refused as "unavailable" (the key may be a new one).
    A token whose key is in the set verifies at any time, without waiting for a fetch.
    """

    def __init__(
        self,
        url: str,
        *,
        fetch: Fetch = fetch_over_https,
        refresh_interval: float = REFRESH_INTERVAL_SECONDS,
        failure_backoff: float = FAILURE_BACKOFF_SECONDS,
        max_backoff: float = MAX_BACKOFF_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self._fetch = fetch
        self._refresh_interval = refresh_interval
        self._failure_backoff = failure_backoff
        self._max_backoff = max_backoff
        self._clock = clock
        self._keys: dict[str, JsonObject] = {}
        self._next_fetch = -math.inf
        self._failures = 0
        """Failed fetches in a row (0: the last fetch succeeded)."""
        self._refreshing: asyncio.Task[None] | None = None
        self.fetches = 0
        """How many fetches were started."""

    async def key(self, kid: str | None) -> JsonObject | None:
        """The JWK with this id (or the only key, when the token names none); None when it is not in the set.

        Raises:
            JwksUnavailableError: the key is not in the set and the last fetch failed.
        """
        found = self._find(kid)
        if found is not None:
            return found
        refreshing = self._refreshing
        loop = asyncio.get_running_loop()
        if refreshing is None or refreshing.done() or refreshing.get_loop() is not loop:
            if self._clock() < self._next_fetch:
                self._refuse_if_failing()
                return None
            refreshing = self._refreshing = loop.create_task(self._refresh())
        # Shielded: a waiter that goes away (a client disconnecting) must not cancel the fetch the others await.
        await asyncio.shield(refreshing)
        found = self._find(kid)
        if found is None:
            self._refuse_if_failing()
        return found

    def _find(self, kid: str | None) -> JsonObject | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    def _refuse_if_failing(self) -> None:
        """For a key not in the set: raise while the last fetch failed (the key may be a new one)."""
        if self._failures:
            raise JwksUnavailableError(f"could not fetch the JWKS from {self.url}")

    async def _refresh(self) -> None:
        """Fetch the set and schedule the earliest next fetch; never raises (waiters read the outcome)."""
        self.fetches += 1
        try:
            document = await self._fetch(self.url)
            keys = document.get("keys") if isinstance(document, dict) else None
            if not isinstance(keys, list):
                raise JwksUnavailableError(f"{self.url} is not a JWKS document")
        except Exception as error:  # noqa: BLE001 - any failure to get the set is a failed fetch, and backs off
            self._failures += 1
            backoff = min(self._max_backoff, self._failure_backoff * 2 ** min(self._failures - 1, 30))
            self._next_fetch = self._clock() + backoff
            logger.warning(
                "could not fetch the JWKS from %s (%s); next attempt in %.0f s",
                self.url,
                type(error).__name__,
                backoff,
            )
            return
        self._keys = {
            str(key.get("kid")): key for key in keys if isinstance(key, dict) and key.get("use", "sig") == "sig"
        }
        self._failures = 0
        self._next_fetch = self._clock() + self._refresh_interval
