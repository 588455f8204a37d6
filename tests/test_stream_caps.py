"""Open streams are capped per session, per principal and per process, so one client cannot empty the process's
long-wait connection pool under everyone else's streams: one stream past a cap is refused (429, or 503 for the
process's cap, with Retry-After) naming the setting that raises it, and a stream that ends, however it ends, frees
its place. Real uvicorn on 127.0.0.1 over the real Redis; every wait is bounded."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx
import pytest

from stratus import build_app
from tests.fixtures.apps import shared
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.streams import (
    LISTEN_HEADERS,
    WAIT_SECONDS,
    assert_refused,
    dropped_call,
    eliciting_session,
    events_stream,
    listen_body,
    opened,
    redis_settings,
    rest_session,
)
from tests.fixtures.wire import BASE_HEADERS

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


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
