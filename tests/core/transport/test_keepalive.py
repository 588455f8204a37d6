"""A call that stays silent longer than the keep-alive interval (STRATUS_KEEPALIVE_SECONDS) answers on an SSE stream
of keep-alive comments, so no front door cuts the response for idling (API Gateway REST streaming ends a response
idle for 5 minutes). A session's GET stream keeps to the same interval (tests/core/transport/test_session_stream.py)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from stratus import McpServer, Settings, build_app
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, STATELESS, initialize_message, stateless_meta, validate_response

pytestmark = pytest.mark.uvicorn
RELEASE = threading.Event()


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
    with uvicorn_serving(build_app(_server(), Settings(keepalive_seconds=0.2, poll_hold_seconds=5))) as base:
        yield base
    RELEASE.set()


def _call(request_id: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": "ponder", "arguments": {}}}


def _stream_until_keepalive_then_answer(http: httpx.Client, body: dict[str, Any], headers: dict[str, str]) -> Any:
    with http.stream("POST", "/mcp", json=body, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        seen: list[str] = []
        for line in lines:  # bounded by the client's read timeout
            seen.append(line)
            if line.startswith(":"):
                break
        assert not any('"result"' in line for line in seen), "the answer came before any keep-alive"
        RELEASE.set()
        data = next(line for line in lines if line.startswith("data:") and '"result"' in line)
        return json.loads(data.removeprefix("data:"))


def test_a_silent_2026_07_28_call_keeps_its_response_alive_until_it_answers(url: str) -> None:
    headers = {**BASE_HEADERS, "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "ponder"}
    body = _call()
    body["params"]["_meta"] = stateless_meta()
    with httpx.Client(base_url=url, timeout=5) as http:
        answer = _stream_until_keepalive_then_answer(http, body, headers)
    validate_response(STATELESS, "tools/call", answer)
    assert answer["result"]["content"][0]["text"] == "done"


def test_a_silent_handshake_era_call_keeps_its_response_alive_until_it_answers(url: str) -> None:
    with httpx.Client(base_url=url, timeout=5) as http:
        opened = http.post("/mcp", json=initialize_message("2025-11-25"), headers=BASE_HEADERS)
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        http.post(
            "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**BASE_HEADERS, **session}
        )
        answer = _stream_until_keepalive_then_answer(http, _call(), {**BASE_HEADERS, **session})
    assert answer["result"]["content"][0]["text"] == "done"


def test_a_quick_call_still_answers_plain_json(url: str) -> None:
    RELEASE.set()
    headers = {**BASE_HEADERS, "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "ponder"}
    body = _call()
    body["params"]["_meta"] = stateless_meta()
    response = httpx.post(f"{url}/mcp", json=body, headers=headers, timeout=5)
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["content"][0]["text"] == "done"
