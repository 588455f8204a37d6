"""`stratus.transport.session_stream`: a session's GET stream and the resumption of a call's stream.

A handshake-era session's GET stream is answered as a poll: what was published on one process since the client's
`Last-Event-ID` reaches it on another (Redis, DynamoDB), only what the session subscribed to, and every answer ends
with an event carrying the id to come back with and a `retry:`. A stream that holds is the session's only one (its
GET stream, its `/events` stream, each resumption of a call's stream): a reconnect takes it over at once, and the
session's end closes it on every process. A call's stream resumes from any event id, on any process, until the
call's answer; a silent stream keeps alive at STRATUS_KEEPALIVE_SECONDS, and a stream whose store fails under it
still ends with a complete response."""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from stratus import Settings, build_app
from stratus.protocol.notifications import Position
from tests.fixtures.apps import shared
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import shared_store_environment, stratus_processes
from tests.fixtures.redis_server import OwnRedis
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.streams import (
    WAIT_SECONDS,
    dropped_call,
    eliciting_session,
    events_stream,
    opened,
    redis_settings,
    rest_session,
    sse_events,
    sse_ids,
)
from tests.fixtures.wire import BASE_HEADERS, McpHttp, initialize_message, sse_fields

SHARED_APP = "tests.fixtures.apps:shared"
POLLED = {"STRATUS_SECRET_KEY": SECRET_KEY, "STRATUS_POLL_HOLD_SECONDS": "0"}
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


HOLDING = {"STRATUS_SECRET_KEY": SECRET_KEY, "STRATUS_POLL_HOLD_SECONDS": "30"}


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
    environment = {"STRATUS_SECRET_KEY": SECRET_KEY}
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
    with stratus_processes(1, "tests.fixtures.apps:fixed", {"STRATUS_SECRET_KEY": SECRET_KEY}) as (only,):
        async with httpx.AsyncClient(base_url=only, timeout=10) as http:
            opened = await McpHttp(http).post(initialize_message("2025-11-25", 1))
            assert opened.json()["result"]["capabilities"]["tools"] == {}  # no listChanged
            session = await McpHttp(http).initialize()
            refused = await http.get("/mcp", headers={**BASE_HEADERS, **session.headers})
            assert refused.status_code == 405 and refused.headers["allow"] == "POST"
            assert "no notifications outside calls" in refused.json()["error"]["message"]


async def test_a_sessions_newer_events_stream_takes_over_the_older_which_ends() -> None:
    settings = redis_settings(max_streams_per_session=4, max_streams=10)
    with uvicorn_serving(build_app(shared, settings), lifespan="on") as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http, AsyncExitStack() as streams:
            session_id = await rest_session(http)
            older = await events_stream(streams, http, session_id)
            await events_stream(streams, http, session_id)
            with anyio.fail_after(WAIT_SECONDS):
                rest = [event async for event in older.events]  # read to its end: it ended
            assert rest == [{"type": "heartbeat"}]  # its place to come back from, then nothing more


@pytest.mark.parametrize("kind", ["events", "get-stream", "resumed"])
async def test_a_stream_whose_store_fails_under_it_still_ends_with_a_complete_response(
    kind: str, own_redis: OwnRedis, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(store=own_redis.url, secret_key=SECRET_KEY, store_timeout_seconds=0.5, poll_hold_seconds=30)
    server_log = logging.getLogger("uvicorn.error")
    with uvicorn_serving(build_app(shared, settings), lifespan="on") as url:
        server_log.addHandler(caplog.handler)
        try:
            async with httpx.AsyncClient(base_url=url, timeout=10) as http:
                with anyio.fail_after(WAIT_SECONDS):
                    async with AsyncExitStack() as streams:
                        path, headers = await stream_of_kind(kind, http)
                        stream = await streams.enter_async_context(opened(http, "GET", path, headers=headers))
                        own_redis.stop()
                        # Read to the end: the server ends the stream cleanly (an unfinished response would be
                        # cut, and httpx raise RemoteProtocolError).
                        async for _ in stream.events:
                            pass
                    refused = await http.get(path, headers=headers)  # a new stream, refused before its headers
                assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
                assert refused.json()["error"]["code"] == -31502
        finally:
            server_log.removeHandler(caplog.handler)
    assert not [record.getMessage() for record in caplog.records if record.name == "uvicorn.error"]


async def stream_of_kind(kind: str, http: httpx.AsyncClient) -> tuple[str, dict[str, str]]:
    """Where a stream of this kind is opened: `/events` of a REST session, a session's GET stream, or the
    resumption of a call's stream (a call waiting for its client's answer)."""
    if kind == "events":
        return f"/events/{await rest_session(http)}", {}
    headers = await eliciting_session(http)
    if kind == "get-stream":
        return "/mcp", headers
    return "/mcp", await dropped_call(http, headers)


async def test_a_newer_resumption_of_a_calls_stream_takes_over_and_the_older_stops_at_its_next_event() -> None:
    settings = redis_settings(max_streams_per_session=4)
    with uvicorn_serving(build_app(shared, settings), lifespan="on") as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http, AsyncExitStack() as streams:
            headers = await eliciting_session(http)
            with anyio.fail_after(WAIT_SECONDS):
                resume = await dropped_call(http, headers)
                older = await streams.enter_async_context(opened(http, "GET", "/mcp", headers=resume))
                newer = await streams.enter_async_context(opened(http, "GET", "/mcp", headers=resume))
                asked = newer.first
                assert asked is not None and asked == older.first  # both replayed the question
                answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}
                assert (await http.post("/mcp", json=answer, headers=headers)).status_code == 202
                result = await anext(newer.events)
                rest = [event async for event in older.events]  # read to its end: it stopped
            assert result["result"]["content"][0]["text"].startswith("hello")
            assert rest == []  # the result went out once, on the newer stream


async def test_a_stream_resumes_with_last_event_id_on_the_other_process(request: pytest.FixtureRequest) -> None:
    environment = {
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"resume-{secrets.token_hex(4)}",
    }
    with stratus_processes(2, "tests.fixtures.apps:shared", environment) as (first, second):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            session = await McpHttp(on_first).initialize()
            body = {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "count_to_three", "_meta": {"progressToken": "p"}},
            }
            posted = await on_first.post("/mcp", json=body, headers={**BASE_HEADERS, **session.headers})
            ids = sse_ids(posted.text)
            resumed = await on_second.get("/mcp", headers={**BASE_HEADERS, **session.headers, "last-event-id": ids[2]})
            assert resumed.status_code == 200
            assert sse_ids(resumed.text) == ids[3:]  # exactly the events after the one named
            assert sse_events(resumed.text) == sse_events(posted.text)[2:]
            stranger = await McpHttp(on_second).initialize()
            foreign = await on_second.get("/mcp", headers={**BASE_HEADERS, **stranger.headers, "last-event-id": ids[2]})
            assert foreign.status_code == 404  # another session's stream is never replayed


async def test_a_dropped_stream_is_followed_on_the_other_process_until_the_call_ends() -> None:
    environment = {
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"follow-{secrets.token_hex(4)}",
        "STRATUS_POLL_HOLD_SECONDS": "1",
    }
    body = {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "ask_user"}}
    with stratus_processes(2, "tests.fixtures.apps:shared", environment) as (first, second):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            initialized = await on_first.post(
                "/mcp",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"elicitation": {}},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
                headers=BASE_HEADERS,
            )
            session = {"mcp-session-id": initialized.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            headers = {**BASE_HEADERS, **session}
            with anyio.fail_after(20):
                async with on_first.stream("POST", "/mcp", json=body, headers=headers) as posted:
                    async for line in posted.aiter_lines():
                        if line.startswith("id: "):
                            priming = line[len("id: ") :]
                            break  # the client drops the stream right after the priming event
                # The client polls from the priming id, on the other process, until the call's answer arrives.
                resumed_events: list[dict[str, Any]] = []
                last = priming
                for _ in range(20):  # each poll holds up to 1 s for the next event: bounded, and by fail_after above
                    polled = await on_second.get("/mcp", headers={**headers, "last-event-id": last})
                    assert polled.status_code == 200  # a poll while the call runs is never an error
                    last = sse_ids(polled.text)[-1]
                    for message in sse_events(polled.text):
                        resumed_events.append(message)
                        if message.get("method") == "elicitation/create":  # answer it on this process
                            answer = {
                                "jsonrpc": "2.0",
                                "id": message["id"],
                                "result": {"action": "accept", "content": {"name": "Lin"}},
                            }
                            assert (await on_second.post("/mcp", json=answer, headers=headers)).status_code == 202
                    if resumed_events and "result" in resumed_events[-1]:
                        break
    assert resumed_events[0]["method"] == "elicitation/create"
    assert resumed_events[-1]["result"]["content"] == [{"type": "text", "text": "hello Lin (accept)"}]


async def test_a_long_stream_ends_cleanly_at_its_limit_and_the_client_resumes() -> None:
    with uvicorn_serving(build_app(shared, Settings(max_stream_seconds=0.05))) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
            opened = await http.post("/mcp", json=init, headers=BASE_HEADERS)
            headers = {
                **BASE_HEADERS,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            with anyio.fail_after(10):
                cut = await http.post(
                    "/mcp",
                    json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_user"}},
                    headers=headers,
                )
                events = sse_events(cut.text)
                assert [event.get("method") for event in events] == ["elicitation/create"]  # cut before the result
                ask = events[0]
                reply = {"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"name": "Kim"}}}
                assert (await http.post("/mcp", json=reply, headers=headers)).status_code == 202
                resumed = await http.get("/mcp", headers={**headers, "last-event-id": sse_ids(cut.text)[-1]})
    assert sse_events(resumed.text)[-1]["result"]["content"] == [{"type": "text", "text": "hello Kim (accept)"}]


@pytest.fixture
def keepalive_url() -> Iterator[str]:
    with uvicorn_serving(build_app(shared, Settings(keepalive_seconds=0.2, poll_hold_seconds=5))) as base:
        yield base


def test_a_silent_get_stream_keeps_alive_at_the_configured_interval(keepalive_url: str) -> None:
    """Not at the 15 s default: the client's 3 s read timeout would end the test first. (A GET stream that holds
    while nothing happens: `STRATUS_POLL_HOLD_SECONDS` is 5 here.)"""
    with httpx.Client(base_url=keepalive_url, timeout=3) as http:
        initialized = http.post("/mcp", json=initialize_message("2025-11-25"), headers=BASE_HEADERS)
        session = {"mcp-session-id": initialized.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        http.post(
            "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**BASE_HEADERS, **session}
        )
        with http.stream("GET", "/mcp", headers={"accept": "text/event-stream", **session}) as response:
            assert response.status_code == 200
            comments = []
            for line in response.iter_lines():  # bounded by the read timeout, and by the count below
                if line.startswith(":"):
                    comments.append(line)
                    if len(comments) == 2:
                        break
    assert comments == [": keep-alive", ": keep-alive"]
