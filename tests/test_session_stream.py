"""A handshake-era session's GET stream: notifications published on one process reach the stream held on
another (Redis pub/sub, DynamoDB polling), only what the session subscribed to, one stream per session, and a
reconnect with `Last-Event-ID` replays exactly what was missed."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx
import pytest

from stratus.protocol.notifications import Position
from tests.fixtures.processes import shared_store_environment, stratus_processes
from tests.fixtures.wire import BASE_HEADERS, McpHttp

SHARED_APP = "tests.fixtures.apps:shared"

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


async def call_tool(http: httpx.AsyncClient, headers: dict[str, str], name: str, arguments: dict[str, Any]) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": secrets.token_hex(4),
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    answer = await http.post("/mcp", json=body, headers=headers)
    assert answer.status_code == 200 and "error" not in answer.json()


@pytest.mark.parametrize("store", ["redis", "dynamodb"])
async def test_notifications_published_on_one_process_reach_the_get_stream_on_another(
    store: str, request: pytest.FixtureRequest
) -> None:
    environment = shared_store_environment(store, request, f"listen-{secrets.token_hex(4)}")
    with stratus_processes(2, SHARED_APP, {"STRATUS_SECRET_KEY": "k", **environment}) as (
        first,
        second,
    ):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            session = await McpHttp(on_first).initialize()
            headers = {**BASE_HEADERS, **session.headers}
            subscribe = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "note://board"}}
            assert (await on_first.post("/mcp", json=subscribe, headers=headers)).status_code == 200
            received: list[tuple[str | None, dict[str, Any] | None]] = []
            with anyio.fail_after(20):
                async with on_second.stream("GET", "/mcp", headers=headers) as stream:
                    assert stream.status_code == 200
                    assert stream.headers["content-type"] == "text/event-stream"
                    messages = sse_messages(stream)
                    priming_id, priming = await anext(messages)
                    assert priming is None and priming_id is not None and priming_id.startswith("g-")
                    second_stream = await on_first.get("/mcp", headers=headers)
                    assert second_stream.status_code == 409
                    assert second_stream.json()["error"]["code"] == -32600
                    await call_tool(on_first, headers, "touch", {"uri": "note://elsewhere"})  # not subscribed
                    await call_tool(on_first, headers, "touch", {"uri": "note://board"})
                    await call_tool(on_first, headers, "reshuffle_tools", {})
                    while len(received) < 2:
                        received.append(await anext(messages))
                    await messages.aclose()
                assert [message for _, message in received] == [
                    {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "note://board"}},
                    {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}},
                ]
                base = Position.parse(priming_id.removeprefix("g-"))
                assert base is not None
                # Positions in the shared log and the session's own (`g-<shared>.<own>`): the session got nothing
                # addressed to it alone.
                assert [event_id for event_id, _ in received] == [f"g-{base.shared + 2}.0", f"g-{base.shared + 3}.0"]

                # Reconnecting on the other process from the first update replays exactly the one after it. The
                # dropped stream's claim is released once its server sees the client gone: bounded retries.
                resume_headers = {**headers, "last-event-id": received[0][0] or ""}
                while True:
                    async with on_first.stream("GET", "/mcp", headers=resume_headers) as resumed:
                        if resumed.status_code == 409:
                            await anyio.sleep(0.05)  # bounded by fail_after above
                            continue
                        assert resumed.status_code == 200
                        replay = sse_messages(resumed)
                        assert (await anext(replay))[1] is None  # priming
                        assert await anext(replay) == received[1]
                        await replay.aclose()
                        break


@pytest.mark.parametrize("store", ["redis", "dynamodb"])
async def test_deleting_the_session_on_one_process_ends_its_get_stream_on_another_at_once(
    store: str, request: pytest.FixtureRequest
) -> None:
    """The stream ends well before its next keep-alive (15 s), when it would otherwise notice the session gone: the
    end is written to the session's own log, which its stream follows beside the server-wide one."""
    environment = {"STRATUS_SECRET_KEY": "k", **shared_store_environment(store, request, f"end-{secrets.token_hex(4)}")}
    with stratus_processes(2, SHARED_APP, environment) as (first, second):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
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
            for bad in ("x", "g-", "g-1.x", "g-1.2.3", "3-x"):
                bad_id = await http.get("/mcp", headers={**BASE_HEADERS, **session.headers, "last-event-id": bad})
                assert bad_id.status_code == 400, bad
                assert "Last-Event-ID" in bad_id.json()["error"]["message"]
