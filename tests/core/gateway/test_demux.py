"""Which caller a message on a shared upstream stream (stdio, WebSocket, HTTP+SSE) reaches: the one it is about, or
none. Driven on the real Demux with the messages an upstream sends; the transports' own tests run it over real
wires (test_shared_stream.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from stratus.gateway.demux import Demux

pytestmark = pytest.mark.anyio

LOG_LINE = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "a secret"}}
QUESTION = {"jsonrpc": "2.0", "id": 90, "method": "elicitation/create", "params": {"message": "Pay 900 EUR?"}}


def _call(request_id: int, method: str = "tools/call") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"name": "pay"}}


def _answer(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}


class Wire:
    """What the transport wrote, in order."""

    def __init__(self) -> None:
        self.written: list[Any] = []
        self.sent = asyncio.Event()

    async def write(self, message: dict[str, Any]) -> None:
        self.written.append(message["id"])
        self.sent.set()


async def _first(exchange: AsyncGenerator[dict[str, Any], None]) -> dict[str, Any]:
    return await anext(exchange)


async def test_with_calls_overlapping_a_message_naming_no_request_reaches_no_caller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    demux, wire = Demux(serialize_calls=False), Wire()
    first, second = demux.exchange(_call(1), wire.write), demux.exchange(_call(2), wire.write)
    async with contextlib.aclosing(first), contextlib.aclosing(second):
        got_first, got_second = asyncio.ensure_future(_first(first)), asyncio.ensure_future(_first(second))
        async with asyncio.timeout(5):
            while wire.written != [1, 2]:
                wire.sent.clear()
                await wire.sent.wait()
        with caplog.at_level(logging.WARNING, logger="stratus.gateway"):
            assert demux.route(LOG_LINE) is None
            refusal = demux.route(QUESTION)
        assert refusal is not None and refusal["id"] == 90 and refusal["error"]["code"] == -32601
        demux.route(_answer(1))
        demux.route(_answer(2))
        async with asyncio.timeout(5):
            assert await got_first == _answer(1)  # its own answer, nothing else before it
            assert await got_second == _answer(2)
    dropped = [record for record in caplog.records if "several calls wait" in record.getMessage()]
    assert [(vars(record)["upstream_method"], vars(record)["setting"]) for record in dropped] == [
        ("notifications/message", "concurrentCalls"),
        ("elicitation/create", "concurrentCalls"),
    ]


async def test_the_one_call_waiting_receives_what_names_no_request() -> None:
    demux, wire = Demux(), Wire()
    exchange = demux.exchange(_call(1), wire.write)
    async with contextlib.aclosing(exchange):
        got = asyncio.ensure_future(_first(exchange))
        async with asyncio.timeout(5):
            await wire.sent.wait()
        demux.route(LOG_LINE)
        async with asyncio.timeout(5):
            assert await got == LOG_LINE


async def test_calls_take_turns_by_default_the_next_sent_once_the_previous_is_answered() -> None:
    demux, wire = Demux(), Wire()
    first, second = demux.exchange(_call(1), wire.write), demux.exchange(_call(2), wire.write)
    async with contextlib.aclosing(first), contextlib.aclosing(second):
        got_first, got_second = asyncio.ensure_future(_first(first)), asyncio.ensure_future(_first(second))
        async with asyncio.timeout(5):
            await wire.sent.wait()
        assert wire.written == [1]  # the second call waits for its turn, unsent
        demux.route(LOG_LINE)  # so this can only be about the first
        async with asyncio.timeout(5):
            assert await got_first == LOG_LINE
        wire.sent.clear()
        demux.route(_answer(1))
        async with asyncio.timeout(5):
            assert await anext(first) == _answer(1)
            with pytest.raises(StopAsyncIteration):
                await anext(first)  # the first call's exchange ends: its turn passes on
            await wire.sent.wait()
        assert wire.written == [1, 2]
        demux.route(_answer(2))
        async with asyncio.timeout(5):
            assert await got_second == _answer(2)


async def test_the_gateways_own_requests_never_receive_a_callers_message() -> None:
    """A health check's `tools/list` runs for no client: a log line while only it waits is nobody's."""
    demux, wire = Demux(), Wire()
    listing = demux.exchange(_call(7, "tools/list"), wire.write)
    async with contextlib.aclosing(listing):
        got = asyncio.ensure_future(_first(listing))
        async with asyncio.timeout(5):
            await wire.sent.wait()
        assert demux.route(LOG_LINE) is None
        demux.route(_answer(7))
        async with asyncio.timeout(5):
            assert await got == _answer(7)
