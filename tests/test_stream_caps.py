"""Open streams are capped per session, per principal and per process, so one client cannot empty the process's
long-wait connection pool under everyone else's streams: one stream past a cap is refused (429, or 503 for the
process's cap, with Retry-After) naming the setting that raises it, and a stream that ends, however it ends, frees
its place. Real uvicorn on 127.0.0.1 over the real Redis; every wait is bounded."""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx
import pytest

from stratus import Settings, build_app
from tests.fixtures.apps import shared
from tests.fixtures.redis_server import OwnRedis
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.streams import LISTEN_HEADERS, Stream, assert_refused, listen_body, opened, redis_settings
from tests.fixtures.wire import BASE_HEADERS

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

JSON = {"content-type": "application/json"}
WAIT_SECONDS = 15.0


async def rest_session(http: httpx.AsyncClient, headers: dict[str, str] | None = None) -> str:
    created = await http.post("/session", headers={**JSON, **(headers or {})})
    assert created.status_code == 200, created.text
    session_id: str = created.json()["sessionId"]
    return session_id


async def events_stream(stack: AsyncExitStack, http: httpx.AsyncClient, session_id: str) -> Stream:
    return await stack.enter_async_context(opened(http, "GET", f"/events/{session_id}"))


async def admitted_once_freed(http: httpx.AsyncClient, method: str, path: str, **options: Any) -> int:
    """Open the stream as soon as the server has noticed another end and freed a place (bounded polling); how
    many attempts were refused first."""
    refusals = 0
    with anyio.fail_after(WAIT_SECONDS):
        while True:
            async with http.stream(method, path, **options) as response:
                if response.status_code == 200:
                    return refusals
                assert response.status_code in (429, 503), response.status_code
            refusals += 1
            await anyio.sleep(0.02)  # polling the server's notice of a closed connection, bounded by fail_after


async def eliciting_session(http: httpx.AsyncClient) -> dict[str, str]:
    """The headers of a new 2025-11-25 session whose client can be asked (elicitation)."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t"}},
    }
    session = (await http.post("/mcp", json=init, headers=BASE_HEADERS)).headers["mcp-session-id"]
    return {**BASE_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}


async def dropped_call(http: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, str]:
    """Start `ask_user` (it waits for the client's answer), drop its stream after the priming event, and return the
    headers that resume it."""
    ask = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_user"}}
    async with http.stream("POST", "/mcp", json=ask, headers=headers) as posted:
        async for line in posted.aiter_lines():
            if line.startswith("id: "):
                return {**headers, "last-event-id": line[4:]}
    raise AssertionError("the call's stream had no priming event")


async def test_a_session_past_its_stream_cap_is_refused_naming_the_setting_and_a_closed_stream_frees_it() -> None:
    """A session holds one `/events` stream and one GET stream at a time (a newer one takes over); with a cap of 1
    the second kind is refused, naming the setting, until the first ends."""
    settings = redis_settings(max_streams_per_session=1, max_streams=10)
    with uvicorn_serving(build_app(shared, settings), lifespan="on") as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http, AsyncExitStack() as streams:
            session_id = await rest_session(http)
            held = await events_stream(streams, http, session_id)

            # The session's MCP GET stream counts too, refused as a JSON-RPC error.
            get_stream = await http.get("/mcp", headers={**BASE_HEADERS, "mcp-session-id": session_id})
            body = assert_refused(get_stream, 429, "STRATUS_MAX_STREAMS_PER_SESSION", 1)
            assert body["error"]["code"] == -31429
            assert body["error"]["message"] == (
                "Too many open streams for this session (1); close one, or raise STRATUS_MAX_STREAMS_PER_SESSION"
            )

            other = await rest_session(http)
            await events_stream(streams, http, other)  # another session's stream still opens

            await held.response.aclose()
            await admitted_once_freed(http, "GET", "/mcp", headers={**BASE_HEADERS, "mcp-session-id": session_id})


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


async def test_the_process_cap_refuses_with_503_a_listen_and_an_events_stream_until_one_ends() -> None:
    settings = redis_settings(max_streams=3)
    with uvicorn_serving(build_app(shared, settings), lifespan="on") as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http, AsyncExitStack() as streams:
            held = [await events_stream(streams, http, await rest_session(http)) for _ in range(3)]

            listen = await http.post("/mcp", json=listen_body(), headers=LISTEN_HEADERS)
            error = assert_refused(listen, 503, "STRATUS_MAX_STREAMS", 3)["error"]
            assert error["code"] == -31503
            assert_refused(await http.get(f"/events/{await rest_session(http)}"), 503, "STRATUS_MAX_STREAMS", 3)

            await held[1].response.aclose()
            await admitted_once_freed(http, "POST", "/mcp", json=listen_body(), headers=LISTEN_HEADERS)


async def test_a_resumed_call_stream_counts_toward_its_sessions_cap_and_is_freed_when_the_client_leaves() -> None:
    settings = redis_settings(max_streams_per_session=2)
    with uvicorn_serving(build_app(shared, settings), lifespan="on") as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http, AsyncExitStack() as streams:
            headers = await eliciting_session(http)
            with anyio.fail_after(WAIT_SECONDS):
                resume = await dropped_call(http, headers)
                # The call goes on, waiting for the client's answer; the client resumes its stream.
                resumed = await streams.enter_async_context(opened(http, "GET", "/mcp", headers=resume))
                asked = resumed.first  # the events after the priming one: the call's question
            assert asked is not None and asked["method"] == "elicitation/create"
            await streams.enter_async_context(opened(http, "GET", "/mcp", headers=headers))  # the GET stream

            again = await http.get("/mcp", headers=resume)
            assert assert_refused(again, 429, "STRATUS_MAX_STREAMS_PER_SESSION", 2)["error"]["code"] == -31429

            await resumed.response.aclose()
            await admitted_once_freed(http, "GET", "/mcp", headers=resume)

            answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}
            assert (await http.post("/mcp", json=answer, headers=headers)).status_code == 202


async def test_streams_that_end_at_their_time_limit_free_their_places() -> None:
    settings = redis_settings(max_streams=1, max_stream_seconds=0.3)
    with uvicorn_serving(build_app(shared, settings), lifespan="on") as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            session_id = await rest_session(http)
            with anyio.fail_after(WAIT_SECONDS):
                ended = await http.get(f"/events/{session_id}")  # read to its end: complete, at the limit
                assert ended.status_code == 200
                await admitted_once_freed(http, "POST", "/mcp", json=listen_body(), headers=LISTEN_HEADERS)
                await admitted_once_freed(http, "GET", f"/events/{session_id}")


@pytest.mark.parametrize("kind", ["events", "get-stream", "resumed"])
async def test_a_stream_whose_store_fails_under_it_still_ends_with_a_complete_response(
    kind: str, own_redis: OwnRedis, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(store=own_redis.url, secret_key="k", store_timeout_seconds=0.5, poll_hold_seconds=30)
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
