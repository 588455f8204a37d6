"""One bound on a stored record, the same on every backend (DynamoDB's 400 KB item less a reserve): values within
it are kept whole, larger ones are refused before anything is written, and a task whose result is too large ends
`failed` with an error naming the setting instead of staying `working` until its TTL."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from stratus import Settings
from stratus.errors import RecordTooLargeError
from stratus.request.outbound import StreamLog
from stratus.stores.bounded import DYNAMODB_MAX_RECORD_BYTES, bounded
from stratus.stores.records import SessionRecord, TaskRecord
from stratus.stores.task_records import TaskOutcome, encode_outcome, encode_request
from stratus.transport.app import build_app
from tests.fixtures.emulator_apps import probe
from tests.fixtures.store_backends import ADD, TTL, Backend
from tests.fixtures.wire import McpHttp, stateless_meta

pytestmark = pytest.mark.anyio
LIMIT = DYNAMODB_MAX_RECORD_BYTES
TASKS: dict[str, Any] = {"io.modelcontextprotocol/tasks": {}}


async def test_an_event_up_to_the_bound_is_kept_whole_and_one_past_it_is_refused_unwritten(backend: Backend) -> None:
    events = bounded(backend.stores, LIMIT).events
    assert await events.append("s", "e" * LIMIT) == 1
    assert [len(event.data) for event in await events.read_after("s", 0)] == [LIMIT]
    with pytest.raises(RecordTooLargeError) as refused:
        await events.append("s", "é" * (LIMIT // 2 + 1))  # counted in UTF-8 bytes, as DynamoDB counts
    assert refused.value.data == {"setting": "STRATUS_MAX_RECORD_BYTES", "limit": LIMIT, "size": LIMIT + 2}
    assert len(await events.read_after("s", 0)) == 1


async def test_a_logged_answer_past_the_bound_is_replaced_in_the_log_by_the_error_for_its_id(backend: Backend) -> None:
    log = StreamLog(bounded(backend.stores, LIMIT).events, "session", priming=False)
    event_id = await log.record({"jsonrpc": "2.0", "id": 4, "result": {"text": "r" * LIMIT}})
    [kept] = await backend.stores.events.read_after(log.key, 0)
    assert event_id == f"{log.token}-{kept.seq}"
    answer = json.loads(kept.data)
    assert (answer["id"], answer["error"]["code"]) == (4, -32603)
    assert answer["error"]["data"]["setting"] == "STRATUS_MAX_RECORD_BYTES"
    with pytest.raises(RecordTooLargeError):  # a notification past it: the call sending it learns
        await log.record({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "n" * LIMIT}})


async def test_a_session_and_a_reply_past_the_bound_are_refused(backend: Backend) -> None:
    stores = bounded(backend.stores, LIMIT)
    huge = SessionRecord(session_id="s1", protocol_version="2025-11-25", client_info={"name": "c" * LIMIT})
    with pytest.raises(RecordTooLargeError):
        await stores.sessions.create(huge)
    assert await stores.sessions.load("s1") is None
    await stores.pending.open("r1", ttl_seconds=TTL)
    with pytest.raises(RecordTooLargeError):
        await stores.pending.deliver("r1", "x" * (LIMIT + 1))
    assert await stores.pending.deliver("r1", "y" * LIMIT)
    assert await stores.pending.wait("r1", within=1.0) == "y" * LIMIT


async def test_a_task_request_and_result_together_up_to_the_bound_are_kept(backend: Backend) -> None:
    tasks = bounded(backend.stores, LIMIT).tasks
    request = ADD._replace(arguments={"q": "q" * 1000})
    await tasks.create(TaskRecord(task_id="t1", principal=None, status="working", request=request), TTL)
    left = LIMIT - len(encode_request(request)) - len(encode_outcome(TaskOutcome(status_message="")))
    with pytest.raises(RecordTooLargeError):
        await tasks.update("t1", status="completed", outcome=_message(left + 1), expect=("working",))
    assert await tasks.update("t1", status="completed", outcome=_message(left), expect=("working",))
    stored = await tasks.get("t1")
    assert stored is not None and (stored.status, stored.outcome) == ("completed", _message(left))


def _message(size: int) -> TaskOutcome:
    return TaskOutcome(status_message="r" * size)


async def _task_outcome(backend: Backend, size: int) -> dict[str, Any]:
    app = build_app(probe, Settings(), stores=bounded(backend.stores, LIMIT))
    meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": {"extensions": TASKS}})

    async def call(mcp: McpHttp, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = await mcp.stateless(method, {**params, "_meta": meta})
        assert response.status_code == 200, response.text[:300]
        result: dict[str, Any] = response.json()["result"]
        return result

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        mcp = McpHttp(http)
        task_id = (await call(mcp, "tools/call", {"name": "blob", "arguments": {"size": size}}))["taskId"]
        with anyio.fail_after(10):
            while (task := await call(mcp, "tasks/get", {"taskId": task_id}))["status"] == "working":
                await backend.stores.events.wait_after(f"task:{task_id}", 0, within=1.0)
        return task


async def test_a_task_whose_result_is_past_the_bound_fails_naming_the_setting_not_stuck_working(
    backend: Backend,
) -> None:
    failed = await _task_outcome(backend, 450_000)  # past DynamoDB's own 400 KB item
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == -32603
    assert failed["error"]["data"]["setting"] == "STRATUS_MAX_RECORD_BYTES"
    completed = await _task_outcome(backend, LIMIT - 4096)
    assert completed["status"] == "completed"
    assert len(completed["result"]["content"][0]["text"]) == LIMIT - 4096
