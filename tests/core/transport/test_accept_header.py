"""How the endpoint reads Accept to choose between a JSON answer and an SSE stream, the same on every call."""

from __future__ import annotations

import pytest

from stratus.transport import http_guards


@pytest.mark.parametrize(
    ("accept", "streams"),
    [
        ("application/json, text/event-stream", True),
        ("text/event-stream", True),
        ("application/json;q=1, Text/Event-Stream ; q=0.5", True),
        ("application/json", False),
        ("*/*", False),
        ("text/event-streams", False),
        (None, False),
    ],
)
def test_accept_lists_the_event_stream_or_not(accept: str | None, streams: bool) -> None:
    assert http_guards.accepts_event_stream(accept) is streams
    assert http_guards.accepts_event_stream(accept) is streams  # the second reading comes from the memo


def test_past_the_memos_bound_every_value_is_still_read_and_the_memo_stops_growing() -> None:
    values = [
        f"application/json, text/event-stream;x={index}" for index in range(http_guards._ACCEPT_READINGS_MAX + 10)
    ]
    values += [f"application/json;x={index}" for index in range(10)]
    answers = [http_guards.accepts_event_stream(value) for value in values]
    assert answers == [True] * (http_guards._ACCEPT_READINGS_MAX + 10) + [False] * 10
    assert len(http_guards._ACCEPT_READINGS) == http_guards._ACCEPT_READINGS_MAX
