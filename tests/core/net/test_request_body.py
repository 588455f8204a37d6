"""The shared request body reader: the whole body across messages, a limit that stops reading, a client gone."""

from __future__ import annotations

import pytest

from stratus.net.request_body import BodyTooLargeError, read_body
from stratus.types import Message, Receive

pytestmark = pytest.mark.anyio


def receiving(messages: list[Message]) -> tuple[Receive, list[Message]]:
    """An ASGI `receive` over `messages`, and the list it takes them from (what is left was never received)."""
    left = list(messages)

    async def receive() -> Message:
        return left.pop(0)

    return receive, left


def part(body: bytes, more: bool = True) -> Message:
    return {"type": "http.request", "body": body, "more_body": more}


async def test_a_body_sent_in_several_messages_is_read_whole() -> None:
    receive, _ = receiving([part(b'{"a":'), part(b""), part(b"1}", more=False)])
    assert await read_body(receive) == b'{"a":1}'


async def test_a_body_past_the_limit_is_refused_naming_the_limit_and_read_no_further() -> None:
    receive, left = receiving([part(b"12345"), part(b"6"), part(b"7", more=False)])
    with pytest.raises(BodyTooLargeError) as refused:
        await read_body(receive, limit=5)
    assert refused.value.limit == 5
    assert left == [part(b"7", more=False)]


async def test_a_body_of_exactly_the_limit_is_read() -> None:
    receive, _ = receiving([part(b"12"), part(b"345", more=False)])
    assert await read_body(receive, limit=5) == b"12345"


async def test_a_client_gone_mid_body_ends_it_with_what_arrived() -> None:
    receive, left = receiving([part(b"12"), {"type": "http.disconnect"}, part(b"never", more=False)])
    assert await read_body(receive, limit=100) == b"12"
    assert left == [part(b"never", more=False)]
