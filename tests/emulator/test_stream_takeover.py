"""Through the emulated Function URL, where an invocation runs on after its client left (as Lambda's do): a GET stream
that holds (`PollHoldSeconds` 30) is its session's only one. A reconnect with `Last-Event-ID` is served at once,
never 409, and the stream it replaces stops at once, so a session cannot hold more invocations than one stream, and
its client gets each event once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, VERSION, call_tool, initialize, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
STREAMING = "stratus-local-StreamingFunction"
WAIT_SECONDS = 10
"""Well below the hold (30 s) and the keep-alive (15 s): an older stream ends because it was replaced."""
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}


@pytest.fixture
def stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE, containers=4, parameters={"PollHoldSeconds": "30"}) as aws:
        yield aws


async def _events(response: httpx.Response) -> AsyncIterator[tuple[str, Any]]:
    """(id, message) per event as it arrives; None for an event without data (the place to come back from)."""
    event_id, data = None, None
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            data = json.loads(line[6:]) if line[6:] else None
        elif not line and event_id is not None:
            yield event_id, data
            event_id, data = None, None


async def _until_busy(stack: LocalAws, count: int) -> None:
    with anyio.fail_after(WAIT_SECONDS):
        while stack.pools[STREAMING].busy != count:  # noqa: ASYNC110 - the emulator's count of running invocations
            await anyio.sleep(0.02)


async def _announce(stack: LocalAws) -> None:
    """A list change, published through the HTTP API (the buffered function) on the shared store."""
    async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
        url = f"{stack.url('ServerlessHttpApi')}/mcp"
        await call_tool(http, url, await initialize(http, url), "announce", {})


async def test_a_dropped_get_stream_is_resumed_at_once_and_the_change_after_arrives_once(stack: LocalAws) -> None:
    url = f"{stack.url('StreamingFunctionUrl')}/mcp"
    async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
        session = {"mcp-session-id": await initialize(http, url), "mcp-protocol-version": VERSION}
        headers = {**HEADERS, **session}
        with anyio.fail_after(WAIT_SECONDS):
            async with http.stream("GET", url, headers=headers) as dropped:
                place, _ = await anext(_events(dropped))  # held: the place to come back from, at once
            # The client dropped it; its invocation runs on, as on Lambda, until it learns it was replaced.
            async with http.stream("GET", url, headers={**headers, "last-event-id": place}) as resumed:
                assert resumed.status_code == 200
                events = _events(resumed)
                assert await anext(events) == (place, None)
                await _until_busy(stack, 1)  # the dropped stream's invocation stopped
                await _announce(stack)
                changed_id, changed = await anext(events)
                assert changed == LIST_CHANGED and changed_id.startswith("g-")


async def test_one_session_holds_one_get_stream_however_many_it_opens(stack: LocalAws) -> None:
    url = f"{stack.url('StreamingFunctionUrl')}/mcp"
    async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http, AsyncExitStack() as streams:
        headers = {**HEADERS, "mcp-session-id": await initialize(http, url), "mcp-protocol-version": VERSION}
        opened = []
        with anyio.fail_after(WAIT_SECONDS):
            for _ in range(3):
                response = await streams.enter_async_context(http.stream("GET", url, headers=headers))
                assert response.status_code == 200
                events = _events(response)
                await anext(events)
                opened.append(events)
            # Each newer stream replaced the one before: those end, complete, with nothing more.
            for replaced in opened[:-1]:
                assert [event async for event in replaced] == []
            await _until_busy(stack, 1)
