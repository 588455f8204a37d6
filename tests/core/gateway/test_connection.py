"""An upstream connection's states and reconnect schedule follow the seed."""

from __future__ import annotations

import pytest

from stratus.gateway.connection import ConnectionState, ConnectionTracker, TransitionError, reconnect_delay

S = ConnectionState


def test_the_reconnect_delay_doubles_from_one_second_up_to_thirty() -> None:
    assert [reconnect_delay(attempt) for attempt in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert reconnect_delay(10_000) == 30


def test_failures_back_off_until_the_attempts_run_out_and_a_success_starts_again() -> None:
    seen: list[tuple[str, S, S]] = []
    tracker = ConnectionTracker("github", max_attempts=3, listeners=[lambda *change: seen.append(change)])
    delays = []
    tracker.move(S.CONNECTING)
    for _ in range(3):
        tracker.move(S.ERROR)
        delays.append(tracker.next_attempt_in())
        if delays[-1] is not None:
            tracker.move(S.CONNECTING)
    assert delays == [1, 2, None]  # the third failure in a row ends the retries
    tracker.move(S.CONNECTING)
    tracker.move(S.CONNECTED)
    assert (tracker.failures, tracker.next_attempt_in()) == (0, 1)
    assert seen[:3] == [
        ("github", S.DISCONNECTED, S.CONNECTING),
        ("github", S.CONNECTING, S.ERROR),
        ("github", S.ERROR, S.CONNECTING),
    ]
    assert seen[-1] == ("github", S.CONNECTING, S.CONNECTED)


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ([], S.CONNECTED),  # disconnected -> connected skips connecting
        ([S.CONNECTING], S.DISCONNECTED),  # a connection under way ends in connected or error
        ([S.CONNECTING, S.ERROR], S.CONNECTED),  # an error reconnects first
    ],
)
def test_moves_the_seed_does_not_allow_are_refused(path: list[S], refused: S) -> None:
    tracker = ConnectionTracker("files")
    for state in path:
        tracker.move(state)
    with pytest.raises(TransitionError):
        tracker.move(refused)
    assert tracker.state == (path[-1] if path else S.DISCONNECTED)
