"""Reading an upstream's HTTP bodies within bounds: lines split anywhere (a CRLF, a UTF-8 character), events with
their names and multi-line data, and lines, events and bodies over the bound refused rather than buffered."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from stratus.gateway.connectors.event_stream import SseEventError, SseEvents, bounded_body, bounded_lines, messages

pytestmark = pytest.mark.anyio


async def chunks_of(*pieces: bytes) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


async def test_lines_end_at_cr_lf_or_crlf_even_when_split_across_chunks() -> None:
    lines = [line async for line in bounded_lines(chunks_of(b"a\r", b"\nb\rc", b"\n\nd"))]
    assert lines == ["a", "b", "c", "", "d"]


async def test_a_character_split_across_chunks_is_decoded_whole() -> None:
    euro = "€".encode()
    lines = [line async for line in bounded_lines(chunks_of(b"price " + euro[:1], euro[1:] + b"5\n"))]
    assert lines == ["price €5"]


async def test_a_line_or_a_body_over_the_bound_is_an_error_not_a_buffer() -> None:
    with pytest.raises(SseEventError):
        _ = [line async for line in bounded_lines(chunks_of(b"x" * 6, b"x" * 6), limit=10)]
    with pytest.raises(SseEventError):
        await bounded_body(chunks_of(b"x" * 6, b"x" * 6), limit=10)
    assert await bounded_body(chunks_of(b'{"a"', b": 1}"), limit=10) == '{"a": 1}'


def test_events_carry_their_name_and_multi_line_data_and_skip_comments() -> None:
    events = SseEvents()
    fed: list[Any] = [
        events.feed(line) for line in [": keep-alive", "event: endpoint", "data: /a", "data: b", "", "data: {}", ""]
    ]
    assert [event for event in fed if event is not None] == [("endpoint", "/a\nb"), ("message", "{}")]
    with pytest.raises(SseEventError):
        SseEvents(limit=4).feed("data: too long")


async def test_messages_are_the_json_objects_of_message_events_even_the_unterminated_last() -> None:
    body = b'event: endpoint\ndata: /x\n\ndata: [1]\n\ndata: not json\n\n: ping\n\ndata: {"id": 1}\n\ndata: {"id": 2}'
    assert [message async for message in messages(chunks_of(body))] == [{"id": 1}, {"id": 2}]
