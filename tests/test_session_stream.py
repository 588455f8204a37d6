"""A handshake-era session's GET stream, answered as a poll: what was published on one process since the client's
`Last-Event-ID` reaches it on another (Redis, DynamoDB), only what the session subscribed to, and every answer ends
with an event carrying the id to come back with and a `retry:`. A stream that holds is the session's only one: a
reconnect takes it over at once, and the session's end closes it on every process."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from stratus.protocol.notifications import Position
from tests.fixtures.processes import shared_store_environment, stratus_processes
from tests.fixtures.wire import BASE_HEADERS, McpHttp, initialize_message, sse_fields

SHARED_APP = "tests.fixtures.apps:shared"
POLLED = {"STRATUS_SECRET_KEY": "k", "STRATUS_POLL_HOLD_SECONDS": "0"}
"""Streams that end once they relayed what is there, as on Lambda by default (`stratus serve` holds them)."""

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


async def sse_messages(response: httpx.Response) -> AsyncGenerator[tuple[str | None, dict[str, Any] | None]]:
    """(event id, message) per SSE event as it arrives; the priming event has no message."""
    event_id: str | None = None
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            event_id = line[len("id: ") :]
        elif line.startswith("data: "):
            data = line[len("data: ") :]
            yield event_id, json.loads(data) if data else None
            event_id = None


@asynccontextmanager
async def two_processes(environment: dict[str, str]) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """A client of each of two processes serving the shared app on one store."""
    with stratus_processes(2, SHARED_APP, environment) as (first, second):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            yield on_first, on_second


async def call_tool(http: httpx.AsyncClient, headers: dict[str, str], name: str, arguments: dict[str, Any]) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": secrets.token_hex(4),
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    answer = await http.post("/mcp", json=body, headers=headers)
    assert answer.status_code == 200 and "error" not in answer.json()


async def poll(
    http: httpx.AsyncClient, headers: dict[str, str], last_event_id: str | None = None
) -> list[dict[str, str]]:
    """One GET poll, read to its end: the events it carried."""
    resume = {"last-event-id": last_event_id} if last_event_id else {}
    with anyio.fail_after(10):
        answer = await http.get("/mcp", headers={**headers, **resume})
    assert answer.status_code == 200 and answer.headers["content-type"] == "text/event-stream"
    return sse_fields(answer.text)


@pytest.mark.parametrize("store", ["redis", "dynamodb"])
async def test_a_poll_on_one_process_gets_what_was_published_on_another_since_its_last_event_id(
    store: str, request: pytest.FixtureRequest
) -> None:
    environment = shared_store_environment(store, request, f"listen-{secrets.token_hex(4)}")
    async with two_processes({**POLLED, **environment}) as (on_first, on_second):
        session = await McpHttp(on_first).initialize()
        headers = {**BASE_HEADERS, **session.headers}
        subscribe = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "note://board"}}
        assert (await on_first.post("/mcp", json=subscribe, headers=headers)).status_code == 200

        # With nothing published yet the first poll ends at once: one event, the place to come back from.
        (opened,) = await poll(on_second, headers)
        assert opened["data"] == "" and opened["retry"] == "5000" and opened["id"].startswith("g-")
        base = Position.parse(opened["id"].removeprefix("g-"))
        assert base is not None

        await call_tool(on_first, headers, "touch", {"uri": "note://elsewhere"})  # not subscribed
        await call_tool(on_first, headers, "touch", {"uri": "note://board"})
        await call_tool(on_first, headers, "reshuffle_tools", {})
        *relayed, pause = await poll(on_second, headers, opened["id"])
        assert [json.loads(event["data"]) for event in relayed] == [
            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "note://board"}},
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}},
        ]
        # Positions in the shared log and the session's own (`g-<shared>.<own>`): the session got nothing
        # addressed to it alone.
        assert [event["id"] for event in relayed] == [f"g-{base.shared + 2}.0", f"g-{base.shared + 3}.0"]
        assert pause == {"id": f"g-{base.shared + 3}.0", "retry": "5000", "data": ""}

        # Nothing new: the next poll carries only its place again. From the first update, on the other process:
        # exactly the one after it.
        assert await poll(on_first, headers, pause["id"]) == [pause]
        again = await poll(on_first, headers, relayed[0]["id"])
        assert [event["id"] for event in again] == [relayed[1]["id"], pause["id"]]
        assert again[0]["data"] == relayed[1]["data"]


HOLDING = {"STRATUS_SECRET_KEY": "k", "STRATUS_POLL_HOLD_SECONDS": "30"}


async def test_a_reconnect_takes_over_a_held_stream_at_once_and_the_older_stops_before_its_next_event(
    request: pytest.FixtureRequest,
) -> None:
    environment = {**HOLDING, **shared_store_environment("redis", request, f"over-{secrets.token_hex(4)}")}
    async with two_processes(environment) as (on_first, on_second):
        session = await McpHttp(on_first).initialize()
        headers = {**BASE_HEADERS, **session.headers}
        with anyio.fail_after(20):
            async with on_second.stream("GET", "/mcp", headers=headers) as older:
                older_events = sse_messages(older)
                priming_id, priming = await anext(older_events)  # held: the place to come back from, at once
                assert priming is None and priming_id is not None
                async with on_first.stream("GET", "/mcp", headers={**headers, "last-event-id": priming_id}) as newer:
                    assert newer.status_code == 200  # never 409: the reconnect is served at once
                    newer_events = sse_messages(newer)
                    assert (await anext(newer_events)) == (priming_id, None)
                    await call_tool(on_first, headers, "reshuffle_tools", {})
                    changed = await anext(newer_events)
                    assert changed[1] == {
                        "jsonrpc": "2.0",
                        "method": "notifications/tools/list_changed",
                        "params": {},
                    }
                    # The older stream ends without relaying it: the client gets each event once.
                    assert [message async for message in older_events] == []


@pytest.mark.parametrize("store", ["redis", "dynamodb"])
async def test_deleting_the_session_on_one_process_ends_its_held_get_stream_on_another_at_once(
    store: str, request: pytest.FixtureRequest
) -> None:
    """The stream ends well within its hold (30 s), without an id to come back with: the end is written to the
    session's own log, which its stream follows beside the server-wide one."""
    environment = {**HOLDING, **shared_store_environment(store, request, f"end-{secrets.token_hex(4)}")}
    async with two_processes(environment) as (on_first, on_second):
        session = await McpHttp(on_first).initialize()
        headers = {**BASE_HEADERS, **session.headers}
        async with on_second.stream("GET", "/mcp", headers=headers) as stream:
            assert stream.status_code == 200
            messages = sse_messages(stream)
            assert (await anext(messages))[1] is None  # priming: the stream is open and following
            assert (await on_first.delete("/mcp", headers=headers)).status_code == 200
            with anyio.fail_after(5):
                rest = [message async for message in messages]
        assert rest == []


async def test_a_get_stream_needs_a_live_session_of_the_caller() -> None:
    environment = {"STRATUS_SECRET_KEY": "k"}
    with stratus_processes(1, "tests.fixtures.apps:shared", environment) as (only,):
        async with httpx.AsyncClient(base_url=only, timeout=10) as http:
            unknown = await http.get("/mcp", headers={**BASE_HEADERS, "mcp-session-id": "nope"})
            assert unknown.status_code == 404
            sessionless = await http.get("/mcp", headers=BASE_HEADERS)
            assert sessionless.status_code == 405 and sessionless.headers["allow"] == "POST"
            session = await McpHttp(http).initialize()
            for bad in ("x", "g-", "g-1.x", "g-1.2.3", "3-x", "3-1.x"):
                bad_id = await http.get("/mcp", headers={**BASE_HEADERS, **session.headers, "last-event-id": bad})
                assert bad_id.status_code == 400, bad
                assert "Last-Event-ID" in bad_id.json()["error"]["message"]


async def test_a_server_with_nothing_to_notify_answers_get_with_405_so_clients_do_not_poll() -> None:
    with stratus_processes(1, "tests.fixtures.apps:fixed", {"STRATUS_SECRET_KEY": "k"}) as (only,):
        async with httpx.AsyncClient(base_url=only, timeout=10) as http:
            opened = await McpHttp(http).post(initialize_message("2025-11-25", 1))
            assert opened.json()["result"]["capabilities"]["tools"] == {}  # no listChanged
            session = await McpHttp(http).initialize()
            refused = await http.get("/mcp", headers={**BASE_HEADERS, **session.headers})
            assert refused.status_code == 405 and refused.headers["allow"] == "POST"
            assert "no notifications outside calls" in refused.json()["error"]["message"]
