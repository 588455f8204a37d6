"""Backend clients made on first use.

Importing redis-py costs a cold start about 45 ms of CPU, boto3 about 120 ms; a request that never touches the
store (a 2026-07-28 call of a tool without limits or breakers) need not pay it. The stores hold a `LazyClient`
and reach the real client through it; the first attribute asked for builds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class LazyClient:
    """Stands in for a client until it is first used, then forwards every attribute to it."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None

    # Only private names and `aclose` here: any other attribute would hide the client's own (e.g. Redis `get`).

    def _resolve(self) -> Any:
        """The client, built now if it was not yet."""
        if self._client is None:
            self._client = self._make()
        return self._client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._resolve(), name)

    async def aclose(self) -> None:
        """Close the client if it was ever made (an async client's `aclose`)."""
        if self._client is not None:
            await self._client.aclose()
