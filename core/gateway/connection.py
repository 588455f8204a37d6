"""One upstream connection's state machine and its reconnect schedule, as the client connection pool it follows
describes them.

    disconnected --> connecting    (connect)
    connecting   --> connected     (connection successful)
    connecting   --> error         (connection failed)
    connected    --> disconnected  (disconnect)
    connected    --> connecting    (reconnect)
    error        --> connecting    (reconnect)
    error        --> disconnected  (removed, or the gateway shuts down)

A failed upstream is tried again after `min(30 s, 1 s * 2^attempt)`, at most `max_attempts` times in a row; a
successful connection starts the count again. Every change of state is reported to the listeners (the
gateway's `connection:state` event). Time is the caller's: the tracker only says how long to wait.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum


class ConnectionState(StrEnum):
    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    ERROR = "error"


ALLOWED: dict[ConnectionState, frozenset[ConnectionState]] = {
    ConnectionState.DISCONNECTED: frozenset({ConnectionState.CONNECTING}),
    ConnectionState.CONNECTING: frozenset({ConnectionState.CONNECTED, ConnectionState.ERROR}),
    ConnectionState.CONNECTED: frozenset({ConnectionState.DISCONNECTED, ConnectionState.CONNECTING}),
    ConnectionState.ERROR: frozenset({ConnectionState.CONNECTING, ConnectionState.DISCONNECTED}),
}
StateListener = Callable[[str, ConnectionState, ConnectionState], None]


class TransitionError(RuntimeError):
    """A move the state machine does not allow (a bug in the caller, not an upstream failure)."""


def reconnect_delay(attempt: int, *, base: float = 1.0, cap: float = 30.0) -> float:
    """Seconds before reconnect attempt `attempt` (0 for the first): `min(cap, base * 2^attempt)`."""
    return min(cap, base * 2.0 ** min(attempt, 32))


@dataclass
class ConnectionTracker:
    """Where one upstream's connection stands, and when to try it again."""

    upstream: str
    max_attempts: int = 8
    state: ConnectionState = ConnectionState.DISCONNECTED
    failures: int = 0
    """Failed connection attempts since the last success."""
    listeners: list[StateListener] = field(default_factory=list)

    def move(self, new: ConnectionState) -> None:
        """Change state, telling the listeners.

        Raises:
            TransitionError: the state machine has no such transition.
        """
        if new not in ALLOWED[self.state]:
            raise TransitionError(f"{self.upstream}: cannot go from {self.state} to {new}")
        old, self.state = self.state, new
        if new is ConnectionState.CONNECTED:
            self.failures = 0
        elif new is ConnectionState.ERROR:
            self.failures += 1
        for listener in self.listeners:
            listener(self.upstream, old, new)

    def next_attempt_in(self) -> float | None:
        """Seconds to wait before reconnecting after a failure; None once `max_attempts` have failed in a row."""
        if self.failures >= self.max_attempts:
            return None
        return reconnect_delay(max(0, self.failures - 1))
