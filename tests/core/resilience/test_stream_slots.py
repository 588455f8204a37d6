"""The per-process count of open streams behind the stream caps: the caller's own caps are told before the
process's, anonymous streams have no principal's cap, and a place is given back exactly once."""

from __future__ import annotations

import pytest

from stratus.errors import TooManyStreamsError
from stratus.resilience.stream_slots import StreamSlots


def refusal(slots: StreamSlots, session_id: str | None, principal: str | None) -> tuple[int, int, str]:
    with pytest.raises(TooManyStreamsError) as refused:
        slots.take(session_id, principal)
    return refused.value.http_status, refused.value.code, refused.value.data["setting"]


def test_the_callers_own_cap_is_told_before_the_process_cap() -> None:
    slots = StreamSlots(per_session=1, per_principal=2, total=2)
    slots.take("s1", "ana")
    slots.take("s2", "ana")
    assert refusal(slots, "s1", "ana") == (429, -31429, "STRATUS_MAX_STREAMS_PER_SESSION")
    assert refusal(slots, "s3", "ana") == (429, -31429, "STRATUS_MAX_STREAMS_PER_PRINCIPAL")
    assert refusal(slots, "s3", "bob") == (503, -31503, "STRATUS_MAX_STREAMS")


def test_anonymous_and_sessionless_streams_are_bounded_by_the_caps_that_can_tell_them_apart() -> None:
    slots = StreamSlots(per_session=1, per_principal=1, total=3)
    slots.take(None, None)
    slots.take(None, None)  # anonymous listens: only the process's cap applies
    slots.take("s1", None)
    assert refusal(slots, None, None)[2] == "STRATUS_MAX_STREAMS"


def test_a_place_is_given_back_once_however_often_it_is_released() -> None:
    slots = StreamSlots(per_session=1, total=2)
    held = slots.take("s1", "ana")
    with held:
        pass
    held.release()
    assert slots.open == 0
    with slots.take("s1", "ana"), slots.take("s2", "ana"):
        assert slots.open == 2
    assert slots.open == 0
