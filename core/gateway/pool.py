"""The container's connections to its upstreams: made on first use, checked before reuse, rebuilt when broken.

Each upstream has at most one client per container, connected lazily under a lock (concurrent first calls share
one handshake). A connection is reused as it is while it is known to work; one idle for longer than
`check_after` seconds, or whose last request failed, is health-checked first (`tools/list`) and replaced when the
check fails. A failed connection attempt moves the upstream to `error`, and the next attempt waits the
tracker's backoff (`min(30 s, 1 s * 2^attempt)`); calls meanwhile fail at once with the time left, and after
`max_attempts` failures in a row they fail until the configuration changes (`replace`). Every change of state
is reported to `on_state`. `aclose` waits for the calls in flight (up to a bound) before closing everything.
A watched 2026-07-28 upstream's listen stream asks for the resource URIs of its `interest`, which outlives each
connection (a rebuilt one asks for them again).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

from stratus.gateway.config import Upstream
from stratus.gateway.connection import ConnectionState, ConnectionTracker, StateListener
from stratus.gateway.listening import ResourceInterest
from stratus.gateway.upstream_client import UpstreamClient, UpstreamError, UpstreamUnavailableError
from stratus.net.addresses import AddressGuard

logger = logging.getLogger("stratus.gateway")
ChangeListener = Callable[[str, str], Awaitable[None]]
"""(upstream, kind): the upstream says its list of `kind` changed."""
UpdateListener = Callable[[str, str], Awaitable[None]]
"""(upstream, uri): the upstream says a resource the gateway subscribed to changed."""
Opener = Callable[[Upstream], Awaitable[UpstreamClient]]
"""Builds and connects a client of an upstream, or raises UpstreamError / UpstreamUnavailableError."""
CHECK_AFTER_SECONDS = 30.0


@dataclass
class _Slot:
    upstream: Upstream
    tracker: ConnectionTracker
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    client: UpstreamClient | None = None
    last_ok: float = 0.0
    suspect: bool = False
    retry_at: float = 0.0
    watcher: asyncio.Task[None] | None = None
    error: str | None = None
    """Why the last connection attempt or health check failed (None once connected)."""
    interest: ResourceInterest = field(default_factory=ResourceInterest)
    """The resource URIs a 2026-07-28 upstream's listen stream asks for, whichever connection serves it."""


class UpstreamPool:
    """Connections to every configured upstream, one per upstream, shared by the calls of this container."""

    def __init__(
        self,
        upstreams: Iterable[Upstream],
        *,
        opener: Opener | None = None,
        clock: Callable[[], float] = time.monotonic,
        check_after: float = CHECK_AFTER_SECONDS,
        max_attempts: int = 8,
        on_state: StateListener | None = None,
        on_change: ChangeListener | None = None,
        on_update: UpdateListener | None = None,
    ) -> None:
        self._open = opener or open_client
        self._clock = clock
        self._check_after = check_after
        self._max_attempts = max_attempts
        self._listeners = [on_state] if on_state is not None else []
        self._on_change = on_change
        self._on_update = on_update
        self._slots = {upstream.name: self._slot(upstream) for upstream in upstreams}
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def _slot(self, upstream: Upstream) -> _Slot:
        tracker = ConnectionTracker(upstream.name, self._max_attempts, listeners=list(self._listeners))
        return _Slot(upstream, tracker)

    @property
    def upstreams(self) -> list[Upstream]:
        """The upstreams in configuration order."""
        return [slot.upstream for slot in self._slots.values()]

    @property
    def watching(self) -> bool:
        """Whether connections are watched for list changes."""
        return self._on_change is not None

    def clients(self) -> list[UpstreamClient]:
        """The connected clients, one per connected upstream."""
        return [slot.client for slot in self._slots.values() if slot.client is not None]

    def state(self, name: str) -> ConnectionState:
        return self._slots[name].tracker.state

    def interest(self, name: str) -> ResourceInterest:
        """The resource URIs this container asks upstream `name` for updates of (a 2026-07-28 one, while watched).

        Raises:
            KeyError: no such upstream.
        """
        return self._slots[name].interest

    def last_error(self, name: str) -> str | None:
        """Why the upstream's last connection attempt or health check failed, if it did."""
        return self._slots[name].error

    async def client(self, name: str) -> UpstreamClient:
        """A working client of upstream `name`, connecting (or reconnecting) as needed.

        Raises:
            KeyError: no such upstream.
            UpstreamUnavailableError: it cannot be reached now (with when the next attempt is due).
        """
        slot = self._slots[name]
        now = self._clock()
        if slot.client is not None and not slot.suspect and now - slot.last_ok < self._check_after:
            return slot.client
        async with slot.lock:
            if slot.client is not None and (slot.suspect or self._clock() - slot.last_ok >= self._check_after):
                await self._check(slot)
            if slot.client is None:
                await self._connect(slot)
            assert slot.client is not None
            return slot.client

    async def _check(self, slot: _Slot) -> None:
        client = slot.client
        assert client is not None
        try:
            await client.list_tools()
        except (UpstreamError, UpstreamUnavailableError) as error:
            slot.client, slot.error = None, f"health check failed: {error}"
            _stop(slot)
            slot.tracker.move(ConnectionState.CONNECTING)
            slot.tracker.move(ConnectionState.ERROR)
            slot.retry_at = self._clock()  # a connection that worked earlier is rebuilt at once
            await _quietly_close(client)
            return
        slot.suspect, slot.last_ok = False, self._clock()

    async def _connect(self, slot: _Slot) -> None:
        now = self._clock()
        if slot.tracker.state is ConnectionState.ERROR:
            wait = slot.tracker.next_attempt_in()
            if wait is None:
                raise UpstreamUnavailableError(
                    f"{slot.upstream.name} failed {slot.tracker.failures} connection attempts in a row; "
                    "it is tried again when its configuration changes"
                )
            if now < slot.retry_at:
                raise UpstreamUnavailableError(
                    f"{slot.upstream.name} is unreachable; next connection attempt in {slot.retry_at - now:.1f} s"
                )
        slot.tracker.move(ConnectionState.CONNECTING)
        try:
            client = await self._open(slot.upstream)
        except (UpstreamError, UpstreamUnavailableError) as error:
            slot.error = str(error)
            slot.tracker.move(ConnectionState.ERROR)
            slot.retry_at = self._clock() + (slot.tracker.next_attempt_in() or 0.0)
            raise
        slot.tracker.move(ConnectionState.CONNECTED)
        slot.client, slot.suspect, slot.last_ok, slot.error = client, False, self._clock(), None
        if self._on_change is not None:
            slot.watcher = asyncio.create_task(
                self._watch(slot.upstream.name, client, slot.interest), name=f"watch-{slot.upstream.name}"
            )

    async def _watch(self, name: str, client: UpstreamClient, interest: ResourceInterest) -> None:
        """Pass on the upstream's list changes and resource updates while its connection lives (long-lived
        processes only: a frozen Lambda container's watcher simply waits)."""
        assert self._on_change is not None
        try:
            async for kind, uri in client.changes(interest):
                if uri is None:
                    await self._on_change(name, kind)
                elif self._on_update is not None:
                    await self._on_update(name, uri)
        except (UpstreamError, UpstreamUnavailableError):
            return  # the connection broke: its next use checks it
        except Exception:  # a watcher must never die unseen; calls do not depend on it
            logger.exception("watching an upstream for list changes failed", extra={"upstream": name})

    def succeeded(self, name: str) -> None:
        """A request through the upstream's connection just worked: no check needed for a while."""
        slot = self._slots.get(name)
        if slot is not None:
            slot.last_ok, slot.suspect = self._clock(), False

    def failed(self, name: str) -> None:
        """A request through the upstream's connection failed: check it before its next use."""
        slot = self._slots.get(name)
        if slot is not None:
            slot.suspect = True

    @asynccontextmanager
    async def in_flight(self) -> AsyncIterator[None]:
        """Count a call as in flight, so `aclose` waits for it."""
        self._in_flight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def replace(self, upstreams: Iterable[Upstream]) -> None:
        """Take a new configuration: changed or removed upstreams are disconnected (a changed one reconnects on
        its next use, its attempts counted afresh); unchanged ones keep their connections."""
        wanted = {upstream.name: upstream for upstream in upstreams}
        slots: dict[str, _Slot] = {}
        for name, upstream in wanted.items():
            slot = self._slots.get(name)
            if slot is not None and slot.upstream == upstream:
                slots[name] = slot
            else:
                slots[name] = self._slot(upstream)
                if slot is not None:
                    slots[name].interest = slot.interest  # its subscribers still want their updates
                    await self._drop(slot)
        for name, slot in self._slots.items():
            if name not in wanted:
                await self._drop(slot)
        self._slots = slots

    async def _drop(self, slot: _Slot) -> None:
        client, slot.client = slot.client, None
        _stop(slot)
        if slot.tracker.state in (ConnectionState.CONNECTED, ConnectionState.ERROR):
            slot.tracker.move(ConnectionState.DISCONNECTED)
        if client is not None:
            await _quietly_close(client)

    async def aclose(self, *, within: float = 10.0) -> None:
        """Wait up to `within` seconds for the calls in flight, then close every connection."""
        try:
            async with asyncio.timeout(within):
                await self._idle.wait()
        except TimeoutError:
            pass
        for slot in self._slots.values():
            await self._drop(slot)


def _stop(slot: _Slot) -> None:
    watcher, slot.watcher = slot.watcher, None
    if watcher is not None:
        watcher.cancel()


async def open_client(
    upstream: Upstream, *, request_seconds: float = 30.0, guard: AddressGuard | None = None
) -> UpstreamClient:
    """A connected client of `upstream` whose requests may each take `request_seconds`, connecting only where
    `guard` allows (closed again when connecting fails)."""
    client = UpstreamClient(upstream, timeout=request_seconds, guard=guard)
    try:
        await client.connect()
    except BaseException:
        await _quietly_close(client)
        raise
    return client


async def _quietly_close(client: UpstreamClient) -> None:
    with suppress(UpstreamError, UpstreamUnavailableError, OSError):
        await client.close()
