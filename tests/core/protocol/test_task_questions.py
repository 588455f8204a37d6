"""A 2025-11-25 task that asks its client something: the task waits `input_required`, its questions go out on the
client's `tasks/result` stream with the related-task metadata, and the client's replies (POSTed like any reply, to
any container) are kept with the task, which then runs again with them. Through a live stream, a buffered front door,
and the official Python SDK 1.30's task client."""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest

from stratus import Context, McpServer, Principal, Settings, build_app
from stratus.server.policy import Authenticator
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.factory import build_stores
from stratus.transport.asgi import buffered_scope
from stratus.types import ASGIApp, Receive, Scope, Send
from tests.fixtures.sdk_sign_in import SCRIPTS, sdk_python
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, HandshakeSession, McpHttp, sse_fields

pytestmark = pytest.mark.anyio
VERSION = "2025-11-25"
FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
RELATED = "io.modelcontextprotocol/related-task"
BOUND = 20.0
TASK_CLIENT = SCRIPTS / "python_130_task_approval.py"


def approval_server(effects: list[str], authenticators: tuple[Authenticator, ...] = ()) -> McpServer:
    server = McpServer("questions", "1.0.0", authenticators=authenticators)

    def prepare() -> str:
        effects.append("prepared")
        return "draft-1"

    @server.tool(task="optional")
    async def publish(ctx: Context) -> str:
        """Prepare once, ask, publish once."""
        draft = await ctx.step("prepare", prepare)
        answer = await ctx.elicit(f"Publish {draft}?", FORM, key="approval")
        if answer.get("action") != "accept" or not answer["content"]["ok"]:
            return "kept as a draft"
        await ctx.step("publish", lambda: effects.append("published"))
        return f"published {draft}"

    return server


@pytest.fixture
def effects() -> list[str]:
    return []


@pytest.fixture
async def stores() -> AsyncIterator[Stores]:
    built = build_stores("memory://", StoreOptions(session_ttl_seconds=600, prefix=f"questions-{secrets.token_hex(4)}"))
    yield built
    await built.aclose()


@pytest.fixture
def app(effects: list[str], stores: Stores) -> Iterator[ASGIApp]:
    yield build_app(approval_server(effects), Settings(), stores=stores)


async def settled(stores: Stores, task_id: str, after: int = 0) -> int:
    """Where the task's event stream is once its run has stopped (at most `BOUND` s)."""
    events = await stores.events.wait_after(f"task:{task_id}", after, within=BOUND)
    assert events, f"task {task_id} did not change state within {BOUND} s"
    return events[-1].seq


async def open_session(mcp: McpHttp) -> HandshakeSession:
    """A 2025-11-25 session whose client declares elicitation."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": VERSION, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t"}},
    }
    response = await mcp.post(initialize)
    session = HandshakeSession(mcp, response.headers["mcp-session-id"], VERSION)
    await session.notify("notifications/initialized")
    return session


async def asking_task(session: HandshakeSession, stores: Stores) -> tuple[str, int]:
    """A `publish` task once its run (in this process) has asked, and where its event stream was then."""
    created = await session.request("tools/call", {"name": "publish", "arguments": {}, "task": {}})
    task_id: str = created.json()["result"]["task"]["taskId"]
    return task_id, await settled(stores, task_id)


def reply(request_id: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": answer}


ACCEPT = {"action": "accept", "content": {"ok": True}}


async def test_the_question_goes_out_on_the_tasks_result_stream_and_the_reply_resumes_the_task(
    app: ASGIApp, effects: list[str], stores: Stores
) -> None:
    with uvicorn_serving(app) as base:
        async with httpx.AsyncClient(base_url=base, timeout=BOUND) as http:
            mcp = McpHttp(http)
            session = await open_session(mcp)
            task_id, _ = await asking_task(session, stores)
            polled = (await session.request("tasks/get", {"taskId": task_id})).json()["result"]
            assert polled["status"] == "input_required"

            body = {"jsonrpc": "2.0", "id": 99, "method": "tasks/result", "params": {"taskId": task_id}}
            headers = {**BASE_HEADERS, **session.headers}
            events: list[dict[str, Any]] = []
            with anyio.fail_after(BOUND):
                async with http.stream("POST", "/mcp", content=json.dumps(body), headers=headers) as streamed:
                    assert streamed.headers["content-type"].startswith("text/event-stream")
                    async for line in streamed.aiter_lines():
                        if not line.startswith("data: ") or line == "data: ":
                            continue
                        message = json.loads(line[len("data: ") :])
                        events.append(message)
                        if message.get("method") == "elicitation/create":
                            answered = await mcp.post(reply(message["id"], ACCEPT), session.headers)
                            assert answered.status_code == 202
                        if message.get("id") == 99:
                            break

    question, final = events[0], events[-1]
    assert question == {
        "jsonrpc": "2.0",
        "id": f"stratus-task:{task_id}:approval",
        "method": "elicitation/create",
        "params": {"message": "Publish draft-1?", "requestedSchema": FORM, "_meta": {RELATED: {"taskId": task_id}}},
    }
    assert final["result"]["content"][0]["text"] == "published draft-1"
    assert final["result"]["_meta"][RELATED] == {"taskId": task_id}
    assert effects == ["prepared", "published"]  # the step before the question ran once


def buffered(app: ASGIApp) -> ASGIApp:
    """`app` behind a buffered front door (API Gateway's HTTP API): the response is sent whole once it ends."""

    async def door(scope: Scope, receive: Receive, send: Send) -> None:
        await app(buffered_scope(scope) if scope["type"] == "http" else scope, receive, send)

    return door


@pytest.fixture
async def buffered_session(app: ASGIApp) -> AsyncIterator[HandshakeSession]:
    transport = httpx.ASGITransport(app=buffered(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=BOUND) as http:
        yield await open_session(McpHttp(http))


async def test_through_a_buffered_door_tasks_result_ends_with_the_question_and_the_client_asks_again(
    buffered_session: HandshakeSession, effects: list[str], stores: Stores
) -> None:
    session = buffered_session
    task_id, seen = await asking_task(session, stores)

    with anyio.fail_after(BOUND):  # it does not wait for the task: the client has the question only once it ends
        first = await session.client.post(
            {"jsonrpc": "2.0", "id": 7, "method": "tasks/result", "params": {"taskId": task_id}}, session.headers
        )
    question, answer = (json.loads(event["data"]) for event in sse_fields(first.text))
    assert (question["id"], question["method"]) == (f"stratus-task:{task_id}:approval", "elicitation/create")
    assert answer["id"] == 7 and answer["error"]["code"] == -31504  # still input_required: ask again
    assert answer["error"]["message"] == f"Task {task_id} is still input_required; ask for its result again"

    assert (await session.client.post(reply(question["id"], ACCEPT), session.headers)).status_code == 202
    await settled(stores, task_id, seen)
    done = await session.request("tasks/result", {"taskId": task_id})
    assert done.json()["result"]["content"][0]["text"] == "published draft-1"
    assert effects == ["prepared", "published"]


async def test_a_refusal_fails_the_task_with_the_clients_error(
    buffered_session: HandshakeSession, effects: list[str], stores: Stores
) -> None:
    session = buffered_session
    task_id, seen = await asking_task(session, stores)
    refusal = {"jsonrpc": "2.0", "id": f"stratus-task:{task_id}:approval", "error": {"code": -1, "message": "No"}}

    assert (await session.client.post(refusal, session.headers)).status_code == 202

    await settled(stores, task_id, seen)
    status = (await session.request("tasks/get", {"taskId": task_id})).json()["result"]
    assert status["status"] == "failed"
    error = (await session.request("tasks/result", {"taskId": task_id})).json()["error"]
    assert (error["code"], error["message"]) == (-1, "No")
    assert effects == ["prepared"]


@pytest.mark.parametrize(
    "request_id", ["stratus-task:no-such-task:approval", "stratus-task:{task}:other-key", "stratus-task:{task}"]
)
async def test_a_reply_no_task_question_awaits_is_refused(
    buffered_session: HandshakeSession, effects: list[str], stores: Stores, request_id: str
) -> None:
    session = buffered_session
    task_id, _ = await asking_task(session, stores)

    refused = await session.client.post(reply(request_id.format(task=task_id), ACCEPT), session.headers)

    assert refused.status_code == 400 and refused.json()["error"]["code"] == -32600
    assert (await session.request("tasks/get", {"taskId": task_id})).json()["result"]["status"] == "input_required"


async def test_another_principals_session_cannot_answer_the_task(effects: list[str], stores: Stores) -> None:
    async def by_header(ctx: Context) -> Principal | None:
        user = ctx.headers.get("x-user")
        return Principal(user) if user else None

    server = approval_server(effects, (by_header,))
    app = build_app(server, Settings(), stores=stores)
    transport = httpx.ASGITransport(app=buffered(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=BOUND) as http:
        http.headers["x-user"] = "alice"
        owner = await open_session(McpHttp(http))
        task_id, _ = await asking_task(owner, stores)
        http.headers["x-user"] = "mallory"
        other = await open_session(McpHttp(http))

        refused = await other.client.post(reply(f"stratus-task:{task_id}:approval", ACCEPT), other.headers)

        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32600
        http.headers["x-user"] = "alice"
        polled = (await owner.request("tasks/get", {"taskId": task_id})).json()["result"]
    assert polled["status"] == "input_required" and effects == ["prepared"]


async def test_the_official_python_sdk_130_task_client_takes_the_task_to_its_end(
    app: ASGIApp, effects: list[str]
) -> None:
    python = sdk_python("python-1.30")
    with uvicorn_serving(app) as base:
        with anyio.fail_after(60):
            ran = await anyio.run_process(
                [python, "-I", str(TASK_CLIENT), f"{base}/mcp", "publish"], check=False, stdin=subprocess.DEVNULL
            )
    printed = ran.stdout.decode().splitlines()
    assert ran.returncode == 0, ran.stderr.decode()[-3000:]
    assert "ASKED Publish draft-1?" in printed and printed[-1] == "RESULT published draft-1"
    assert "STATUS input_required" in printed
    assert effects == ["prepared", "published"]
