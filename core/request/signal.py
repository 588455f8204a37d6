"""A request's cancellation: set when the client cancels or goes away, or the deadline passes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class CancellationSignal:
    """Set when the client cancels the request (or the deadline passes); handlers may poll or wait on it."""

    def __init__(self) -> None:
        self._cancelled = False
        self.reason: str | None = None
        self._waiters: list[asyncio.Event] = []
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, reason: str | None = None) -> None:
        if not self._cancelled:
            self._cancelled, self.reason = True, reason
            for waiter in self._waiters:
                waiter.set()
            for callback in self._callbacks:
                callback()

    def child(self) -> CancellationSignal:
        """A signal that is cancelled with this one, and may also be cancelled on its own (one call of a request)."""
        child = CancellationSignal()
        self.on_cancel(lambda: child.cancel(self.reason))
        return child

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` when the request is cancelled (at once if it already is); returns an unsubscribe."""
        if self._cancelled:
            callback()
            return _nothing
        self._callbacks.append(callback)
        return lambda: self._callbacks.remove(callback) if callback in self._callbacks else None

    async def wait(self) -> None:
        """Return once the request is cancelled."""
        if self._cancelled:
            return
        waiter = asyncio.Event()
        self._waiters.append(waiter)
        await waiter.wait()


def _nothing() -> None:
    pass
