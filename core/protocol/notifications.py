"""Notifications that are not part of a call, from any container to the streams that relay them.

Server-wide notifications (`ctx.notify_resource_updated`, `ctx.notify_list_changed`) are appended to one shared
event log that every listening stream follows: a session's GET stream (handshake era) and a `subscriptions/listen`
stream (2026-07-28). What is addressed to one session (what its REST calls send its client: progress, log messages,
elicitation and sampling requests; and the mark that it ended) goes to that session's own log instead, which its
streams follow beside the shared one. So ending a session writes nothing every stream must read, and the shared log
carries only what is rare (docs/scale.md, "The notification log"). A stream's position is one in each log.
"""

import asyncio
import json
from typing import TYPE_CHECKING, Any, NamedTuple

from stratus.stores.records import SESSION_LOG_SUFFIX

if TYPE_CHECKING:
    from stratus.stores.base import EventLogStore
    from stratus.stores.records import StreamEvent

NOTIFICATIONS = "*/notifications"
"""The server-wide notification log (`*/`: server-wide, see EventLogStore; session streams are `<session id>/...`)."""
GAP_GRACE_SECONDS = 1.0
"""How long a follower waits for a missing event number (an append still landing elsewhere) before skipping it."""
GAP_POLL_SECONDS = 0.05


def session_log(session_id: str) -> str:
    """The log of what is addressed to one session. No `Last-Event-ID` names it: a call stream's token (the part
    before the first `-`) never holds one."""
    return session_id + SESSION_LOG_SUFFIX


class Position(NamedTuple):
    """Where a stream is: the last event it relayed of the server-wide log and of its session's own log."""

    shared: int
    own: int = 0

    def __str__(self) -> str:
        return f"{self.shared}.{self.own}"

    @classmethod
    def parse(cls, text: str) -> "Position | None":
        """`<shared>.<own>`, or `<shared>` alone (an id from before sessions had their own logs); None if neither."""
        shared, dot, own = text.partition(".")
        shared_number, own_number = event_number(shared), event_number(own) if dot else 0
        if shared_number is None or own_number is None:
            return None
        return cls(shared_number, own_number)


MAX_EVENT_NUMBER_DIGITS = 19
"""An event's number in its log is a counter, below 2**63 in every store: a longer one names no event."""


def event_number(text: str) -> int | None:
    """The number of an event in a `Last-Event-ID` (ASCII digits; `str.isdigit` also takes `²`, which int() refuses),
    or None when it names none (a number too long for any log's counter among them)."""
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_EVENT_NUMBER_DIGITS:
        return None
    return int(text)


class NotificationLog:
    """Publishes notifications that are not part of a call, for every listening stream on any container."""

    def __init__(self, events: "EventLogStore") -> None:
        self.events = events

    async def publish(self, method: str, params: dict[str, Any]) -> None:
        await self.events.append(NOTIFICATIONS, json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    async def send_to(self, session_id: str, message: dict[str, Any]) -> None:
        """Append a message for one session's streams only (a notification or a request to its client)."""
        entry = {"session": session_id, "message": message}
        await self.events.append(session_log(session_id), json.dumps(entry, separators=(",", ":"), ensure_ascii=False))

    async def end(self, session_id: str) -> None:
        """Tell the session's open streams, wherever they are, that it ended."""
        await self.events.append(session_log(session_id), json.dumps({"session": session_id, "ended": True}))

    async def supersede(self, session_id: str, kind: str) -> None:
        """Tell the session's open streams of `kind`, wherever they are, that a newer one took over: each checks
        whether it still holds its claim, and stops if not."""
        await self.events.append(session_log(session_id), json.dumps({"session": session_id, "superseded": kind}))


class LoggedNotification(NamedTuple):
    """One published notification and the stream's position once it is relayed."""

    position: Position
    message: dict[str, Any]
    session: str | None = None
    """The session it is addressed to; None for a server-wide notification."""
    ended: bool = False
    """The session ended: its streams close."""
    superseded: str | None = None
    """A newer stream of this kind took over the session's one: a mark for the streams, never relayed."""


def _logged(position: Position, data: str) -> LoggedNotification:
    entry = json.loads(data)
    session = entry.get("session")
    if not isinstance(session, str) or "jsonrpc" in entry:
        return LoggedNotification(position, entry)
    message = entry.get("message")
    ended = entry.get("ended") is True
    superseded = entry.get("superseded")
    return LoggedNotification(
        position,
        message if isinstance(message, dict) else {},
        session,
        ended,
        superseded if isinstance(superseded, str) else None,
    )


class _Cursor:
    """A follower's place in one log, with the gap it is waiting out."""

    def __init__(self, stream: str, last: int, gap_grace: float) -> None:
        self.stream = stream
        self.last = last
        self.gap_grace = gap_grace
        self._gap_since: float | None = None

    def in_order(self, events: "list[StreamEvent]", now: float) -> "list[StreamEvent]":
        """The events that follow the last one without a missing number; all of them once a gap outlived its
        grace (an event that never landed, or one trimmed from the log)."""
        run: list[StreamEvent] = []
        for event in events:
            if event.seq != self.last + len(run) + 1:
                break
            run.append(event)
        if len(run) == len(events):
            self._gap_since = None
            return run
        self._gap_since = self._gap_since if self._gap_since is not None else now
        if now - self._gap_since >= self.gap_grace:
            self._gap_since = None
            return events
        return run


class ReadAhead:
    """The server-wide log's read after a position, started before the session it is for is read: a poll's two
    reads take one round trip instead of two (on DynamoDB, a poll's billed time is mostly these). Close it once the
    poll is served: a read not taken is cancelled."""

    def __init__(self, events: "EventLogStore", after: int) -> None:
        self.after = after
        self._read = asyncio.ensure_future(events.read_after(NOTIFICATIONS, after))

    async def take(self) -> "list[StreamEvent]":
        return await self._read

    def close(self) -> None:
        if not self._read.done():
            self._read.cancel()
        elif not self._read.cancelled():
            self._read.exception()  # a failure nobody took is dropped with the poll, not reported as never retrieved


class NotificationFollower:
    """Reads the server-wide notification log, and a session's own log when following for one, in order from a
    position, waiting for what is published next.

    Appends from several containers can land out of order on a backend without atomic numbering (DynamoDB: the
    number is taken, then the item written), so a missing number is waited for up to GAP_GRACE_SECONDS.
    """

    def __init__(
        self,
        events: "EventLogStore",
        after: Position,
        *,
        gap_grace: float = GAP_GRACE_SECONDS,
        session_id: str | None = None,
        own_head: int | None = None,
        ahead: ReadAhead | None = None,
    ) -> None:
        self.events = events
        self.session_id = session_id
        """Whose own log to follow besides the server-wide one (None: none)."""
        self._own_head = own_head
        """The own log's last number as read with the session (`SessionRecord.log_head`): the first read, when it
        waits for nothing, skips the log if the position is already there."""
        self._ahead = ahead
        """The server-wide log's read, already under way: the first read, when it waits for nothing, takes it."""
        self._shared = _Cursor(NOTIFICATIONS, after.shared, gap_grace)
        self._own = _Cursor(session_log(session_id), after.own, gap_grace) if session_id is not None else None

    @property
    def last(self) -> Position:
        return Position(self._shared.last, self._own.last if self._own is not None else 0)

    @classmethod
    async def from_now(
        cls, events: "EventLogStore", *, session_id: str | None = None, own_head: int | None = None
    ) -> "NotificationFollower":
        """A follower of what is published from now on (`own_head`: the session's own log's last number, known
        already, so that log is not read)."""
        logs = [NOTIFICATIONS]
        if session_id is not None and own_head is None:
            logs.append(session_log(session_id))
        kept = await asyncio.gather(*(events.read_after(log, 0) for log in logs))
        last = [log[-1].seq if log else 0 for log in kept]
        own = own_head if own_head is not None else last[1] if len(last) > 1 else 0
        return cls(events, Position(last[0], own), session_id=session_id)

    async def next(self, within: float) -> list[LoggedNotification]:
        """The notices after the last ones returned, waiting at most `within` seconds for one; [] if none came.

        With `within` 0 the logs are read once, and a missing number that may still land is waited out (at most
        its grace): a poll must not leave an event behind that its next poll, with a fresh grace, would skip again.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        cursors = [self._shared] if self._own is None else [self._shared, self._own]
        while True:
            left = max(0.0, deadline - loop.time())
            found = await self._read({cursor.stream: cursor.last for cursor in cursors}, left)
            if not found:
                return []
            notices: list[LoggedNotification] = []
            for cursor in (cursor for cursor in cursors if cursor.stream in found):
                for event in cursor.in_order(found[cursor.stream], loop.time()):
                    cursor.last = event.seq
                    notices.append(_logged(self.last, event.data))
            mine = [notice for notice in notices if notice.session in (None, self.session_id)]
            if mine:
                return mine
            if not notices:  # only numbers past a gap still within its grace: each round moves towards its end
                await asyncio.sleep(GAP_POLL_SECONDS)
            elif left <= 0:  # only entries addressed to other sessions (a shared log written before sessions had
                return []  # their own)

    async def _read(self, after: dict[str, int], within: float) -> "dict[str, list[StreamEvent]]":
        head, self._own_head = self._own_head, None
        ahead, self._ahead = self._ahead, None
        if ahead is not None and (within > 0 or after.get(NOTIFICATIONS) != ahead.after):
            ahead = None
        if within <= 0 and head is not None and self._own is not None and self._own.last >= head:
            # A poll's one look (a wait must watch the log: what comes next is not in the head)
            after = {stream: seq for stream, seq in after.items() if stream != self._own.stream}
        if within > 0:
            return await self.events.wait_any(after, within)
        # Nothing to wait for: plain reads, without the subscription a wait takes on Redis.
        read = await asyncio.gather(
            *(
                ahead.take() if ahead is not None and stream == NOTIFICATIONS else self.events.read_after(stream, seq)
                for stream, seq in after.items()
            )
        )
        return {stream: events for stream, events in zip(after, read, strict=True) if events}
