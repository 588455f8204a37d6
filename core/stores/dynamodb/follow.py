"""Waits on one event log within one process share one poll loop: the reads scale with the logs followed in a
process, not with its waiters.

Every open stream follows the server-wide notification log; on DynamoDB, which cannot push, each wait used to poll
it on its own (10-250 ms). Here the first wait on a log starts a poll loop, later waits join it, and the loop ends
with its last waiter. Each read asks for what follows the lowest position any waiter holds, so every waiter gets
what a read of its own would have returned (a number still missing is read again until it lands), and the pause
between reads backs off from `first` to `most` while nothing new comes. A Lambda container serves one request at a
time, so there it changes nothing: it pays where one process holds many streams (`stratus local`, a container
host), docs/scale.md.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping

from stratus.errors import StoreUnavailableError
from stratus.stores.records import StreamEvent

ReadAfter = Callable[[str, int], Awaitable[list[StreamEvent]]]


class _Poll:
    """One log's poll loop and what its last read returned."""

    def __init__(self, read_after: ReadAfter, stream: str, first: float, most: float) -> None:
        self.read_after = read_after
        self.stream = stream
        self.first = first
        self.most = most
        self.waiting: Counter[int] = Counter()  # the positions waited after, with how many wait at each
        self.after: int | None = None  # the position the last read read after (None: no read yet)
        self.events: list[StreamEvent] = []
        self.error: BaseException | None = None
        self.read = asyncio.Event()  # set, and replaced, after each read
        self.nudge = asyncio.Event()  # a waiter behind the last read's position: read again now
        self.loop = asyncio.get_running_loop()
        self.task: asyncio.Task[None] | None = None

    def answer(self, seq: int) -> list[StreamEvent] | None:
        """What follows `seq` by the last read; None when that read started past `seq` (or none was made yet)."""
        if self.error is not None:
            raise self.error
        if self.after is None or self.after > seq:
            return None
        return [event for event in self.events if event.seq > seq]

    async def run(self, done: Callable[[_Poll], None]) -> None:
        pause, newest = self.first, None
        try:
            while self.waiting:
                after = min(self.waiting)
                self.nudge.clear()  # a waiter behind `after` arriving during the read nudges the next one
                events = await self.read_after(self.stream, after)
                self.after, self.events = after, events
                woken, self.read = self.read, asyncio.Event()
                woken.set()
                latest = events[-1].seq if events else None
                pause = self.first if latest is not None and latest != newest else min(pause * 2, self.most)
                newest = latest if latest is not None else newest
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.nudge.wait(), pause)
        except Exception as error:  # noqa: BLE001 - handed to every waiter, as its own read would have raised it
            self.error = error
        finally:
            if self.waiting and self.error is None:  # cancelled under its waiters (the event loop closing)
                self.error = StoreUnavailableError("The event log could not be followed; retry shortly")
            self.read.set()
            done(self)


class SharedPolls:
    """`wait_after` for a store that can only be polled, one poll loop per log in this process."""

    def __init__(self, read_after: ReadAfter, *, first: float, most: float) -> None:
        self.read_after = read_after
        self.first = first
        self.most = most
        self._polls: dict[str, _Poll] = {}

    def _poll(self, stream: str) -> _Poll:
        poll = self._polls.get(stream)
        if poll is None or poll.error is not None or poll.loop is not asyncio.get_running_loop():
            poll = self._polls[stream] = _Poll(self.read_after, stream, self.first, self.most)
        return poll

    def _done(self, poll: _Poll) -> None:
        if self._polls.get(poll.stream) is poll:
            del self._polls[poll.stream]

    async def wait_after(self, stream: str, seq: int, within: float) -> list[StreamEvent]:
        """The log's events after `seq` as soon as a read finds any; [] after `within` seconds without one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        poll = self._poll(stream)
        behind = bool(poll.waiting) and seq < min(poll.waiting)
        poll.waiting[seq] += 1
        if poll.task is None or poll.task.done():
            poll.task = loop.create_task(poll.run(self._done))
        elif behind:  # the reads so far start past `seq`: read again now rather than after the pause
            poll.nudge.set()
        try:
            while True:
                events = poll.answer(seq)
                left = deadline - loop.time()
                if events or (events is not None and left <= 0):
                    return events
                with contextlib.suppress(TimeoutError):  # not yet read for this position: wait for that read
                    await asyncio.wait_for(poll.read.wait(), max(0.0, left) if events is not None else None)
        finally:
            poll.waiting[seq] -= 1
            if not poll.waiting[seq]:
                del poll.waiting[seq]
            if not poll.waiting:
                poll.nudge.set()  # the loop ends now rather than after its pause

    async def wait_any(self, after: Mapping[str, int], within: float) -> dict[str, list[StreamEvent]]:
        """`wait_after` on several logs at once, each joining its own poll loop: what the first to find events found
        (with what any other found by then); {} after `within` seconds."""
        waits = {asyncio.ensure_future(self.wait_after(stream, seq, within)): stream for stream, seq in after.items()}
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
        found = {waits[wait]: wait.result() for wait in done}
        return {stream: events for stream, events in found.items() if events}
