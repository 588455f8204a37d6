"""A 2026-07-28 upstream's `subscriptions/listen` streams, asking for list changes and the resource URIs a
container's clients subscribed to through it.

`ResourceInterest` counts, per URI, the subscriptions this container passed on to one upstream; it outlives the
connection (a rebuilt one asks again for the same URIs). `listen` keeps one listen request open: when the set of
URIs changes it opens another with the new filter and closes the old one only once the new one is acknowledged,
so no update falls into the gap (one may come twice meanwhile). When the upstream ends the request gracefully
(its stream limit), the same filter is asked again; an error ends the watch.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Protocol

from stratus.gateway.connectors.contract import UpstreamError
from stratus.types import JsonObject

LISTEN_SECONDS = 3600.0
"""The longest one `subscriptions/listen` request is left open (the upstream usually ends it sooner)."""
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
LIST_FLAGS = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")


class Requester(Protocol):
    async def request(
        self, method: str, params: JsonObject, *, peer: Any = None, within: float | None = None
    ) -> JsonObject: ...


class ResourceInterest:
    """The resource URIs one container asks an upstream's listen stream for, each counted per subscription."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self.version = 0
        """Raised whenever the set of URIs changes."""
        self.acknowledged = -1
        """The version whose listen request the upstream acknowledged last."""
        self.ended = False
        """The watch of the current connection ended (an error): nothing listens until it is rebuilt."""
        self.changed = asyncio.Event()
        self._moved = asyncio.Event()

    @property
    def uris(self) -> list[str]:
        return sorted(self._counts)

    def add(self, uri: str) -> int:
        """Count one more subscription to `uri`; the version whose acknowledgment covers it."""
        self._counts[uri] = self._counts.get(uri, 0) + 1
        if self._counts[uri] == 1:
            self._bump()
        return self.version

    def remove(self, uri: str) -> None:
        """Count one subscription to `uri` fewer; the last one gone, the URI is no longer asked for."""
        count = self._counts.get(uri, 0)
        if count > 1:
            self._counts[uri] = count - 1
        elif count == 1:
            del self._counts[uri]
            self._bump()

    def filter(self) -> JsonObject:
        """The `notifications` filter of a listen request now."""
        wanted: JsonObject = dict.fromkeys(LIST_FLAGS, True)
        if self._counts:
            wanted["resourceSubscriptions"] = self.uris
        return wanted

    async def settled(self, version: int) -> None:
        """Wait until a listen request with `version`'s URIs (or a later one) is acknowledged, or the watch ends
        (the caller bounds the wait)."""
        while self.acknowledged < version and not self.ended:
            await self._moved.wait()

    def _bump(self) -> None:
        self.version += 1
        self.changed.set()

    def mark(self, *, acknowledged: int | None = None, ended: bool | None = None) -> None:
        if acknowledged is not None:
            self.acknowledged = max(self.acknowledged, acknowledged)
        if ended is not None:
            self.ended = ended
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()


async def listen(client: Requester, interest: ResourceInterest) -> AsyncIterator[JsonObject]:
    """The notifications of successive listen requests, acknowledgments left out, until one fails (its error)."""
    heard = _Heard()
    open_: dict[int, asyncio.Future[JsonObject]] = {}
    """The listen requests open, by the version of their filter, oldest first."""
    interest.mark(ended=False)
    try:
        while True:
            if not open_ or max(open_) < interest.version:
                interest.changed.clear()
                asked = client.request(
                    "subscriptions/listen",
                    {"notifications": interest.filter()},
                    peer=_Listener(heard, interest.version),
                    within=LISTEN_SECONDS,
                )
                open_[interest.version] = asyncio.ensure_future(asked)
            if heard.messages:
                version, message = heard.messages.popleft()
                if version in open_ and version > interest.acknowledged:
                    interest.mark(acknowledged=version)  # acknowledged first (the spec's order): older ones go
                    for older in [each for each in open_ if each < version]:
                        open_.pop(older).cancel()
                if message.get("method") != ACKNOWLEDGED:
                    yield message
                continue
            heard.arrived.clear()
            waits: list[asyncio.Future[Any]] = [
                asyncio.ensure_future(heard.arrived.wait()),
                asyncio.ensure_future(interest.changed.wait()),
            ]
            try:
                await asyncio.wait([*waits, *open_.values()], return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
            newest = max(open_)
            for version, ended in list(open_.items()):
                if ended.done() and not heard.messages:  # what it said before its answer is passed on first
                    del open_[version]
                    if version == newest:
                        ended.result()  # an error (not offered, or gone) ends the watch; else listen again
    finally:
        interest.mark(ended=True)
        for still_open in open_.values():
            still_open.cancel()


class _Heard:
    """What the open listen requests heard, in order, each with the version of its request's filter."""

    def __init__(self) -> None:
        self.messages: deque[tuple[int, JsonObject]] = deque()
        self.arrived = asyncio.Event()


class _Listener:
    """The peer of one listen request: keeps what it hears, asks the gateway's client nothing."""

    def __init__(self, heard: _Heard, version: int) -> None:
        self.heard = heard
        self.version = version

    @property
    def capabilities(self) -> JsonObject:
        return {}

    @property
    def wants_progress(self) -> bool:
        return False

    @property
    def log_level(self) -> str | None:
        return None

    async def notify(self, method: str, params: JsonObject) -> None:
        self.heard.messages.append((self.version, {"method": method, "params": params}))
        self.heard.arrived.set()

    async def ask(self, method: str, params: JsonObject, key: str | None = None) -> JsonObject:
        raise UpstreamError({"code": -32601, "message": f"{method} is not available here"})
