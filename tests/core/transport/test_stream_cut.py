"""What a handshake-era call's SSE response carries when it outlives STRATUS_KEEPALIVE_SECONDS or
STRATUS_MAX_STREAM_SECONDS, so that no answer is lost:

- an `initialize` slower than the keep-alive interval still answers as plain JSON, with its `Mcp-Session-Id`
  header (a keep-alive stream's headers go out before the session exists);
- at 2025-11-25 a silent call's stream starts with a priming event, and once it is cut at the time limit the client
  resumes from that id and gets the answer;
- before 2025-11-25 there is no priming event: a stream that has carried no event id is not cut (the client could
  not resume it), and the answer arrives on it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stratus import McpServer, Settings, build_app
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.redis_server import OwnRedis
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, initialize_message, sse_fields

pytestmark = pytest.mark.uvicorn
RELEASE = threading.Event()
KEEPALIVE = 0.1
MAX_STREAM = 0.3
HOLD = 0.2
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ponder", "arguments": {}}}


def _server() -> McpServer:
    server = McpServer("quiet")

    @server.tool()
    async def ponder() -> str:
        """Answers once the test lets it, sending nothing meanwhile."""
        released = await asyncio.to_thread(RELEASE.wait, 10)
        return "done" if released else "timed out"

    return server


@pytest.fixture
def url() -> Iterator[str]:
    RELEASE.clear()
    settings = Settings(keepalive_seconds=KEEPALIVE, max_stream_seconds=MAX_STREAM, poll_hold_seconds=HOLD)
    with uvicorn_serving(build_app(_server(), settings)) as base:
        yield base
    RELEASE.set()


def _session(http: httpx.Client, version: str) -> dict[str, str]:
    opened = http.post("/mcp", json=initialize_message(version), headers=BASE_HEADERS)
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": version}
    http.post(
        "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**BASE_HEADERS, **session}
    )
    return session


def _answer(lines: Iterator[str]) -> dict[str, Any]:
    data = next(line for line in lines if line.startswith("data:") and '"result"' in line)
    return dict(json.loads(data.removeprefix("data:")))


def test_a_2025_11_25_stream_cut_at_its_time_limit_is_polled_from_its_priming_id_until_the_answer(url: str) -> None:
    with httpx.Client(base_url=url, timeout=5) as http:
        session = _session(http, "2025-11-25")
        cut = http.post("/mcp", json=CALL, headers={**BASE_HEADERS, **session})  # read to its end: the cut
        assert cut.headers["content-type"].startswith("text/event-stream")
        assert '"result"' not in cut.text
        ids = [line.removeprefix("id:").strip() for line in cut.text.splitlines() if line.startswith("id:")]
        assert len(ids) == 1 and ids[0].endswith("-0"), cut.text  # the priming event's, and only that
        token = ids[0].removesuffix("-0")
        resume = {"accept": "text/event-stream", **session}
        # The call still runs: the poll holds, then answers 200 with where to come back from, counting the poll.
        waiting = http.get("/mcp", headers={**resume, "last-event-id": ids[0]})
        assert waiting.status_code == 200
        (pause,) = sse_fields(waiting.text)
        assert pause["id"].startswith(f"{token}-") and pause["id"].endswith(".1")
        assert (pause["retry"], pause["data"]) == ("1000", "")
        RELEASE.set()
        last, answer = pause["id"], None
        for _ in range(25):  # each poll holds 0.2 s: bounded to 5 s
            polled = sse_fields(http.get("/mcp", headers={**resume, "last-event-id": last}).text)
            last = polled[-1]["id"]
            if '"result"' in polled[-1]["data"]:
                answer = json.loads(polled[-1]["data"])
                break
    assert answer is not None and answer["result"]["content"][0]["text"] == "done"
    assert last.startswith(f"{token}-") and "." not in last  # the answer keeps its one id, however many polls it took


@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26"])
def test_an_older_stream_without_an_event_id_is_not_cut_and_carries_the_answer(url: str, version: str) -> None:
    with httpx.Client(base_url=url, timeout=5) as http:
        session = _session(http, version)
        with http.stream("POST", "/mcp", json=CALL, headers={**BASE_HEADERS, **session}) as response:
            lines = response.iter_lines()
            comments = 0
            for line in lines:  # bounded by the read timeout, and by the count: past the time limit
                assert not line.startswith("id:")
                comments += line.startswith(":")
                if comments * KEEPALIVE >= 2 * MAX_STREAM:
                    break
            RELEASE.set()
            answer = _answer(lines)
    assert answer["result"]["content"][0]["text"] == "done"


def test_an_initialize_slower_than_the_keepalive_interval_answers_json_with_its_session_id(
    own_redis: OwnRedis,
) -> None:
    """The store is paused (CLIENT PAUSE) for longer than the keep-alive interval while the session is created."""
    settings = Settings(store=own_redis.url, secret_key=SECRET_KEY, keepalive_seconds=0.05, max_sessions=0)
    app = build_app(_server(), settings)
    with uvicorn_serving(app, lifespan="on") as base, httpx.Client(base_url=base, timeout=5) as http:
        assert http.post("/mcp", json=initialize_message(), headers=BASE_HEADERS).status_code == 200  # connected
        own_redis.client().client_pause(500, all=True)
        opened = http.post("/mcp", json=initialize_message(), headers=BASE_HEADERS)
    assert opened.status_code == 200
    assert opened.headers["content-type"].startswith("application/json")
    assert opened.json()["result"]["protocolVersion"] == "2025-11-25"
    assert opened.headers["mcp-session-id"]
