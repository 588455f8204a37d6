"""Caps on the streams one process holds open: per session, per principal and in all.

Every open stream that follows the notification log or a call's event log (a session's GET stream and its
resumptions, `GET /events/{id}`, `subscriptions/listen`) holds one connection of the process's long-wait pool for as
long as it lasts. That pool is per process, so the count is too: kept in memory, exact because every stream of a
process opens and ends on its one event loop. The process's cap stays below the pool's size, so a client is refused
with a clear answer before any stream, its own or another user's, finds the pool empty. The caps of a session and
of a principal keep one caller from taking the process's places; anonymous callers (auth off) cannot be told apart,
so only their sessions' caps and the process's bound them.
"""

from __future__ import annotations

from collections import Counter
from types import TracebackType

from stratus.errors import TooManyStreamsError

PER_SESSION_SETTING = "STRATUS_MAX_STREAMS_PER_SESSION"
PER_PRINCIPAL_SETTING = "STRATUS_MAX_STREAMS_PER_PRINCIPAL"
TOTAL_SETTING = "STRATUS_MAX_STREAMS"


class StreamSlot:
    """One open stream's place; released once, when the stream ends (use it as a context manager)."""

    def __init__(self, slots: StreamSlots, session_id: str | None, principal: str | None) -> None:
        self._slots = slots
        self._keys: tuple[str | None, str | None] | None = (session_id, principal)

    def release(self) -> None:
        if self._keys is not None:
            self._slots._give_back(*self._keys)
            self._keys = None

    def __enter__(self) -> StreamSlot:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.release()


class StreamSlots:
    """Counts this process's open streams and refuses one past a cap (0: no cap of that kind)."""

    def __init__(self, *, per_session: int = 0, per_principal: int = 0, total: int = 0) -> None:
        self.per_session = per_session
        self.per_principal = per_principal
        self.total = total
        self.open = 0
        self._by_session: Counter[str] = Counter()
        self._by_principal: Counter[str] = Counter()

    def take(self, session_id: str | None, principal: str | None) -> StreamSlot:
        """A place for one more stream of this session (None: a sessionless one) and principal (None: anonymous).

        Raises:
            TooManyStreamsError: a cap is reached; the caller's own (429) is told before the process's (503).
        """
        if self.per_session and session_id is not None and self._by_session[session_id] >= self.per_session:
            raise TooManyStreamsError(
                f"Too many open streams for this session ({self.per_session}); close one, or raise "
                f"{PER_SESSION_SETTING}",
                setting=PER_SESSION_SETTING,
                limit=self.per_session,
                busy=False,
            )
        if self.per_principal and principal is not None and self._by_principal[principal] >= self.per_principal:
            raise TooManyStreamsError(
                f"Too many open streams for this principal ({self.per_principal}); close one, or raise "
                f"{PER_PRINCIPAL_SETTING}",
                setting=PER_PRINCIPAL_SETTING,
                limit=self.per_principal,
                busy=False,
            )
        if self.total and self.open >= self.total:
            raise TooManyStreamsError(
                f"This server holds its maximum of open streams ({self.total}); retry later, or raise "
                f"{TOTAL_SETTING} (below the long-wait connection pool)",
                setting=TOTAL_SETTING,
                limit=self.total,
                busy=True,
            )
        self.open += 1
        if session_id is not None:
            self._by_session[session_id] += 1
        if principal is not None:
            self._by_principal[principal] += 1
        return StreamSlot(self, session_id, principal)

    def _give_back(self, session_id: str | None, principal: str | None) -> None:
        self.open -= 1
        for counts, key in ((self._by_session, session_id), (self._by_principal, principal)):
            if key is not None:
                counts[key] -= 1
                if counts[key] <= 0:
                    del counts[key]
