"""The seed's session REST + SSE API across two processes sharing Redis: a session made on one is used on the
other, `/events` carries notifications published anywhere, errors carry their HTTP status, DELETE ends it."""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx
import pytest

from stratus import Context, McpServer, Settings, build_app
from tests.fixtures.apps import LIMIT
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import shared_store_environment, stratus_processes
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import initialize_message, sse_fields

SHARED_APP = "tests.fixtures.apps:shared"

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

JSON = {"content-type": "application/json"}


HELD = {"STRATUS_SECRET_KEY": SECRET_KEY, "STRATUS_POLL_HOLD_SECONDS": "30"}
"""`/events` streams that stay open while nothing happens, as `stratus serve` holds them by default (for 30 s here)."""
POLLED = {"STRATUS_SECRET_KEY": SECRET_KEY, "STRATUS_POLL_HOLD_SECONDS": "0"}
"""`/events` streams that end once they relayed what is there, as on Lambda by default."""


async def test_events_is_a_poll_that_ends_with_where_to_come_back_and_the_next_one_gets_what_came_meanwhile(
    request: pytest.FixtureRequest,
) -> None:
    environment = shared_store_environment("redis", request, f"rest-{secrets.token_hex(4)}")
    with stratus_processes(2, SHARED_APP, {**POLLED, **environment}) as (first, second):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            session_id = (await on_first.post("/session", headers=JSON)).json()["sessionId"]
            opened = sse_fields((await on_second.get(f"/events/{session_id}")).text)
            assert [json.loads(event["data"])["type"] for event in opened] == ["connected", "heartbeat"]
            place = opened[-1]
            assert place["retry"] == "5000" and place["id"].startswith("g-")

            counted = {"name": "count_to_three", "arguments": {}, "_meta": {"progressToken": "p"}}
            assert (await rest_call(on_first, session_id, "tools/call", counted)).status_code == 200
            polled = sse_fields(
                (await on_first.get(f"/events/{session_id}", headers={"last-event-id": place["id"]})).text
            )
            kinds = [json.loads(event["data"])["type"] for event in polled]
            assert kinds == ["connected", "notification", "notification", "notification", "notification", "heartbeat"]
            assert [event["id"] for event in polled[1:-1]] == [f"g-0.{own}" for own in range(1, 5)]
            assert polled[-1]["id"] == "g-0.4" and polled[-1]["retry"] == "5000"

            again = sse_fields((await on_second.get(f"/events/{session_id}", headers={"last-event-id": "g-0.4"})).text)
            assert [json.loads(event["data"])["type"] for event in again] == ["connected", "heartbeat"]
            bad = await on_second.get(f"/events/{session_id}", headers={"last-event-id": "7-1"})
            assert bad.status_code == 400 and "Last-Event-ID" in bad.json()["error"]


async def events_of(response: httpx.Response) -> AsyncGenerator[dict[str, Any]]:
    """The events of an open stream as they arrive, heartbeats (its keep-alives and places to resume) left out."""
    async for line in response.aiter_lines():
        if line.startswith("data: ") and (event := json.loads(line[len("data: ") :]))["type"] != "heartbeat":
            yield event


async def rest_call(http: httpx.AsyncClient, session_id: str, method: str, params: Any = None) -> httpx.Response:
    body = {"sessionId": session_id, "method": method, **({"params": params} if params is not None else {})}
    return await http.post("/mcp", json=body, headers=JSON)


async def test_a_rest_session_works_on_every_process_and_its_events_carry_notifications(
    request: pytest.FixtureRequest,
) -> None:
    environment = shared_store_environment("redis", request, f"rest-{secrets.token_hex(4)}")
    with stratus_processes(2, SHARED_APP, {**HELD, **environment}) as (
        first,
        second,
    ):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            created = await on_first.post("/session", headers=JSON)
            assert created.status_code == 200
            session_id = created.json()["sessionId"]

            listed = await rest_call(on_second, session_id, "tools/list")
            assert listed.status_code == 200 and listed.json()["sessionId"] == session_id
            assert "add" in [tool["name"] for tool in listed.json()["result"]["tools"]]
            added = await rest_call(on_first, session_id, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
            assert added.json() == {
                "sessionId": session_id,
                "result": {"content": [{"type": "text", "text": '{"result":5}'}], "structuredContent": {"result": 5}},
            }
            subscribed = await rest_call(on_second, session_id, "resources/subscribe", {"uri": "note://board"})
            assert subscribed.json() == {"sessionId": session_id, "result": {}}

            with anyio.fail_after(20):
                async with on_second.stream("GET", f"/events/{session_id}") as stream:
                    assert stream.status_code == 200
                    events = events_of(stream)
                    assert await anext(events) == {"type": "connected", "sessionId": session_id}
                    await rest_call(
                        on_first, session_id, "tools/call", {"name": "touch", "arguments": {"uri": "note://board"}}
                    )
                    notified = await anext(events)
                    await events.aclose()
            assert notified == {
                "type": "notification",
                "data": {
                    "jsonrpc": "2.0",
                    "method": "notifications/resources/updated",
                    "params": {"uri": "note://board"},
                },
            }

            closed = await on_second.delete(f"/session/{session_id}")
            assert closed.status_code == 200 and closed.json() == {"message": "Session closed successfully"}
            after = await rest_call(on_first, session_id, "tools/list")
            assert after.status_code == 404 and after.json()["error"]["code"] == -32600
            assert (await on_first.get(f"/events/{session_id}")).status_code == 404
            assert (await on_first.delete(f"/session/{session_id}")).status_code == 404


async def test_a_rest_call_streams_progress_logs_and_questions_to_events_and_delete_closes_it_everywhere(
    request: pytest.FixtureRequest,
) -> None:
    environment = shared_store_environment("redis", request, f"rest-{secrets.token_hex(4)}")
    with stratus_processes(2, SHARED_APP, {**HELD, **environment}) as (first, second):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            capabilities: dict[str, Any] = {"capabilities": {"elicitation": {}, "sampling": {}}}
            session_id = (await on_first.post("/session", json=capabilities, headers=JSON)).json()["sessionId"]
            bystander = (await on_first.post("/session", headers=JSON)).json()["sessionId"]
            with anyio.fail_after(20):
                async with on_second.stream("GET", f"/events/{session_id}") as stream:
                    events = events_of(stream)
                    assert (await anext(events))["type"] == "connected"
                    # Another session's call sends nothing to this stream.
                    counted_elsewhere = {"name": "count_to_three", "arguments": {}, "_meta": {"progressToken": 9}}
                    assert (await rest_call(on_first, bystander, "tools/call", counted_elsewhere)).status_code == 200
                    counted = {"name": "count_to_three", "arguments": {}, "_meta": {"progressToken": "p"}}
                    done = await rest_call(on_first, session_id, "tools/call", counted)
                    assert done.json()["result"]["content"] == [{"type": "text", "text": "done"}]
                    streamed = [await anext(events) for _ in range(4)]
                    assert [event["type"] for event in streamed] == ["notification"] * 4
                    assert streamed[0]["data"]["params"] == {
                        "level": "info",
                        "logger": "count_to_three",
                        "data": "counting",
                    }
                    assert [event["data"]["params"] for event in streamed[1:]] == [
                        {"progressToken": "p", "progress": step, "total": 3, "message": f"step {step}"}
                        for step in (1, 2, 3)
                    ]

                    asking = asyncio.ensure_future(rest_call(on_first, session_id, "tools/call", {"name": "ask_user"}))
                    question = await anext(events)
                    assert question["type"] == "request" and question["data"]["method"] == "elicitation/create"
                    answer = {"id": question["data"]["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
                    delivered = await on_second.post(f"/session/{session_id}/responses", json=answer, headers=JSON)
                    assert delivered.json() == {"sessionId": session_id, "message": "Response delivered"}
                    asked = await asking
                    assert asked.json()["result"]["content"] == [{"type": "text", "text": "hello Ada (accept)"}]
                    again = await on_second.post(f"/session/{session_id}/responses", json=answer, headers=JSON)
                    assert again.status_code == 400  # answered already: nothing waits for it

                    sampling = asyncio.ensure_future(
                        rest_call(
                            on_second, session_id, "tools/call", {"name": "ask_model", "arguments": {"question": "hi"}}
                        )
                    )
                    question = await anext(events)
                    assert question["type"] == "request" and question["data"]["method"] == "sampling/createMessage"
                    reply = {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}
                    answer = {"id": question["data"]["id"], "result": reply}
                    assert (
                        await on_first.post(f"/session/{session_id}/responses", json=answer, headers=JSON)
                    ).status_code == 200
                    assert (await sampling).json()["result"]["content"] == [
                        {"type": "text", "text": "model said: hello"}
                    ]

                    with anyio.fail_after(5):  # far sooner than the 30 s heartbeat that used to notice it
                        assert (await on_first.delete(f"/session/{session_id}")).status_code == 200
                        assert await anext(events) == {"type": "closed", "sessionId": session_id}
                        assert [event async for event in events] == []  # the stream ended


async def test_a_rest_session_that_declared_no_capability_is_not_asked(request: pytest.FixtureRequest) -> None:
    environment = shared_store_environment("redis", request, f"rest-{secrets.token_hex(4)}")
    with stratus_processes(1, SHARED_APP, {"STRATUS_SECRET_KEY": SECRET_KEY, **environment}) as (only,):
        async with httpx.AsyncClient(base_url=only, timeout=10) as http:
            session_id = (await http.post("/session", headers=JSON)).json()["sessionId"]
            refused = await rest_call(http, session_id, "tools/call", {"name": "ask_user"})
            assert refused.status_code == 400 and refused.json()["error"]["code"] == -32021
            bad = await http.post("/session", json={"capabilities": []}, headers=JSON)
            assert bad.status_code == 400
            unknown = await http.post(f"/session/{session_id}/responses", json={"id": "x", "result": {}}, headers=JSON)
            assert unknown.status_code == 400
            malformed = await http.post(f"/session/{session_id}/responses", json={"id": "x"}, headers=JSON)
            assert malformed.status_code == 400


async def test_rest_errors_carry_their_http_status_and_a_rate_limit_is_429_with_retry_after(
    request: pytest.FixtureRequest,
) -> None:
    environment = shared_store_environment("redis", request, f"rest-{secrets.token_hex(4)}")
    with stratus_processes(1, "tests.fixtures.apps:shared", {"STRATUS_SECRET_KEY": SECRET_KEY, **environment}) as (
        only,
    ):
        async with httpx.AsyncClient(base_url=only, timeout=10) as http:
            session_id = (await http.post("/session", headers=JSON)).json()["sessionId"]
            unknown = await rest_call(http, session_id, "tools/frobnicate")
            assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32601
            bad = await rest_call(http, session_id, "tools/call", {"name": "no-such-tool"})
            assert bad.status_code == 400 and bad.json()["error"]["code"] == -32602
            malformed = await http.post("/mcp", json={"sessionId": session_id, "method": 7}, headers=JSON)
            assert malformed.status_code == 400 and malformed.json()["error"]["code"] == -32600
            statuses = [
                (await rest_call(http, session_id, "tools/call", {"name": "limited"})).status_code for _ in range(LIMIT)
            ]
            assert statuses == [200] * LIMIT
            refused = await rest_call(http, session_id, "tools/call", {"name": "limited"})
            assert refused.status_code == 429 and refused.json()["error"]["code"] == -31429
            assert int(refused.headers["retry-after"]) >= 1
            assert (await http.get("/session")).status_code == 405
            # No body opens a session; a body that is not JSON (whitespace alone included) is refused.
            for body in (b"\n", b"{", b"\x00\xff"):
                garbled = await http.post("/session", content=body, headers=JSON)
                assert garbled.status_code == 400, body
            assert (await http.post("/events/whatever", headers=JSON)).status_code == 405


@pytest.mark.parametrize("store", ["redis", "dynamodb"])
async def test_the_session_limit_and_health_statistics_hold_across_processes(
    store: str, request: pytest.FixtureRequest
) -> None:
    environment = shared_store_environment(store, request, f"rest-{secrets.token_hex(4)}")
    settings = {"STRATUS_SECRET_KEY": SECRET_KEY, "MCP_HTTP_MAX_SESSIONS": "2", "MCP_HTTP_SESSION_TIMEOUT": "600000"}
    with stratus_processes(2, SHARED_APP, {**settings, **environment}) as (first, second):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            kept = (await on_first.post("/session", headers=JSON)).json()["sessionId"]
            ended = (await on_second.post("/session", headers=JSON)).json()["sessionId"]

            refused = await on_first.post("/session", headers=JSON)
            assert refused.status_code == 503
            assert refused.json() == {
                "error": "Maximum sessions reached (2); end a session, retry later, or raise STRATUS_MAX_SESSIONS",
                "maxSessions": 2,
                "setting": "STRATUS_MAX_SESSIONS",
            }
            mcp_refused = await on_second.post(
                "/mcp", json=initialize_message(), headers={**JSON, "accept": "application/json"}
            )
            assert mcp_refused.status_code == 503
            assert mcp_refused.json()["error"] == {
                "code": -31503,
                "message": "Maximum sessions reached (2); end a session, retry later, or raise STRATUS_MAX_SESSIONS",
                "data": {"maxSessions": 2, "setting": "STRATUS_MAX_SESSIONS"},
            }

            health = await on_second.get("/health")
            assert health.status_code == 200
            report = health.json()
            assert report["sessions"]["activeSessions"] == 2
            assert (report["sessions"]["maxSessions"], report["sessions"]["sessionTimeout"]) == (2, 600000)
            assert report["sessions"]["oldestSession"] <= report["sessions"]["newestSession"]
            assert report["store"]["backend"] == store and report["store"]["healthy"] is True
            assert (report["status"], report["transport"]) == ("healthy", "http")
            assert isinstance(report["uptime"], int)

            assert (await on_first.delete(f"/session/{ended}")).status_code == 200
            # The second process's census answers its /health for a few seconds; the first takes its own now.
            assert (await on_first.get("/health")).json()["sessions"]["activeSessions"] == 1
            replacement = await on_second.post("/session", headers=JSON)
            assert replacement.status_code == 200
            assert (await rest_call(on_first, kept, "tools/list")).status_code == 200


def progress_server(released: threading.Event) -> McpServer:
    server = McpServer("progress", "1.0.0")

    @server.tool()
    async def slow(ctx: Context) -> str:
        """Reports half its progress, then waits until the test releases it."""
        await ctx.report_progress(1, 2, "half way")
        await asyncio.to_thread(released.wait, 10)
        return "done"

    return server


async def test_in_a_long_lived_process_a_rest_calls_progress_reaches_an_open_events_stream_while_it_runs() -> None:
    """`stratus serve`, or an app served by uvicorn in a process that lives on: `/events` is held (no
    STRATUS_POLL_HOLD_SECONDS set), so a browser sees a call's progress as it happens, not at its next poll."""
    released = threading.Event()
    with uvicorn_serving(build_app(progress_server(released), Settings())) as base:
        async with httpx.AsyncClient(base_url=base, timeout=10) as http:
            session_id = (await http.post("/session", headers=JSON)).json()["sessionId"]
            async with http.stream("GET", f"/events/{session_id}") as stream:
                events = events_of(stream)
                with anyio.fail_after(10):
                    assert await anext(events) == {"type": "connected", "sessionId": session_id}
                    call = {"name": "slow", "arguments": {}, "_meta": {"progressToken": "p"}}
                    running = asyncio.ensure_future(rest_call(http, session_id, "tools/call", call))
                    progress = await anext(events)
                assert progress == {
                    "type": "notification",
                    "data": {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": "p", "progress": 1, "total": 2, "message": "half way"},
                    },
                }
                assert not running.done()  # the call still runs: its progress came while it ran
                released.set()
                with anyio.fail_after(10):
                    answered = await running
                assert answered.status_code == 200
                assert answered.json()["result"]["content"] == [{"type": "text", "text": "done"}]


async def test_under_stratus_serve_a_rest_calls_progress_reaches_an_open_events_stream_while_the_call_runs() -> None:
    """A real `stratus serve`, no STRATUS_POLL_HOLD_SECONDS: the call reports progress, then waits for its client's
    answer to a question; the progress is on the open `/events` stream before the call ends."""
    with stratus_processes(1, SHARED_APP, {"STRATUS_SECRET_KEY": SECRET_KEY}) as (only,):
        async with httpx.AsyncClient(base_url=only, timeout=10) as http:
            capabilities: dict[str, Any] = {"capabilities": {"elicitation": {}}}
            session_id = (await http.post("/session", json=capabilities, headers=JSON)).json()["sessionId"]
            with anyio.fail_after(20):
                async with http.stream("GET", f"/events/{session_id}") as stream:
                    events = events_of(stream)
                    assert (await anext(events))["type"] == "connected"
                    running = asyncio.ensure_future(
                        rest_call(
                            http, session_id, "tools/call", {"name": "halfway_then_ask", "_meta": {"progressToken": 7}}
                        )
                    )
                    progress = await anext(events)
                    assert progress["data"]["params"] == {
                        "progressToken": 7,
                        "progress": 1,
                        "total": 2,
                        "message": "half way",
                    }
                    question = await anext(events)
                    assert question["type"] == "request" and not running.done()  # the call still runs
                    answer = {"id": question["data"]["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
                    assert (
                        await http.post(f"/session/{session_id}/responses", json=answer, headers=JSON)
                    ).status_code == 200
                    answered = await running
    assert answered.json()["result"]["content"] == [{"type": "text", "text": "hello Ada"}]


async def test_on_lambda_an_events_stream_ends_once_it_relayed_what_is_there() -> None:
    """The same app with `lambda_host` (as the Lambda entry points build it): a poll, which no departed client holds."""
    with uvicorn_serving(build_app(progress_server(threading.Event()), Settings(lambda_host=True))) as base:
        async with httpx.AsyncClient(base_url=base, timeout=10) as http:
            session_id = (await http.post("/session", headers=JSON)).json()["sessionId"]
            with anyio.fail_after(10):
                polled = sse_fields((await http.get(f"/events/{session_id}")).text)
    assert [json.loads(event["data"])["type"] for event in polled] == ["connected", "heartbeat"]
    assert polled[-1]["retry"] == "5000"
