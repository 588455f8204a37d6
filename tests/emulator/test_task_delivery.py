"""Tasks through the emulated stack when Lambda's event queue delivers as AWS delivers: every launch of the task
worker twice (`deliver_events_twice`), and a launch whose run dies (its process ends mid-run) sent to the worker's
on-failure destination, the sweeper, which marks its task or relayed call failed. On Redis and on DynamoDB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import HEADERS, STORES, TEMPLATE, VERSION, serving
from tests.fixtures.wire import sse_fields

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
TASK_WORKER = "stratus-local-TaskWorkerFunction"
SWEEPER = "stratus-local-SweeperFunction"
WAIT_SECONDS = 30
INTERNAL_ERROR = -32603


@pytest.fixture(scope="module", params=STORES)
def aws(request: pytest.FixtureRequest) -> Iterator[LocalAws]:
    """One place per principal (all callers here are anonymous: one principal), so a task that never frees its
    place would refuse the next one."""
    environment = {"STRATUS_MAX_TASKS_PER_PRINCIPAL": "1"}
    with serving(TEMPLATE, store=request.param, deliver_events_twice=True, environment=environment) as served:
        yield served


def _url(aws: LocalAws) -> str:
    return f"{aws.url('ServerlessHttpApi')}/mcp"


async def _session(http: httpx.AsyncClient, url: str, capabilities: dict[str, Any] | None = None) -> dict[str, str]:
    params = {
        "protocolVersion": VERSION,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    opened = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=HEADERS
    )
    assert opened.status_code == 200, opened.text
    return {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": VERSION}


async def _request(http: httpx.AsyncClient, url: str, headers: dict[str, str], method: str, params: Any) -> Any:
    response = await http.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers
    )
    assert response.status_code == 200, response.text
    return response.json()


async def _start_task(http: httpx.AsyncClient, url: str, headers: dict[str, str], tool: str, arguments: Any) -> str:
    created = await _request(http, url, headers, "tools/call", {"name": tool, "arguments": arguments, "task": {}})
    assert "result" in created, created
    task_id: str = created["result"]["task"]["taskId"]
    return task_id


async def test_a_task_launched_twice_runs_its_tool_once_and_completes(aws: LocalAws, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    worker = aws.pools[TASK_WORKER]
    invoked = len(worker.served)
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            headers = await _session(http, _url(aws))
            task_id = await _start_task(http, _url(aws), headers, "count_run", {"path": str(runs)})
            result = await _request(http, _url(aws), headers, "tasks/result", {"taskId": task_id})
            while len(worker.served) < invoked + 2 or worker.busy:  # noqa: ASYNC110 - the emulator's thread
                await anyio.sleep(0.02)
    assert result["result"]["structuredContent"]["result"] == 1
    assert len(worker.served) == invoked + 2  # the launch was delivered twice...
    assert runs.read_text().splitlines() == ["run"]  # ...and ran once


async def test_a_task_whose_worker_dies_ends_failed_and_frees_its_place(aws: LocalAws) -> None:
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            headers = await _session(http, _url(aws))
            task_id = await _start_task(http, _url(aws), headers, "die", {})
            task: dict[str, Any] = {"status": "working"}
            while task["status"] == "working":
                task = (await _request(http, _url(aws), headers, "tasks/get", {"taskId": task_id}))["result"]
                await anyio.sleep(0.05)
            ended = await _request(http, _url(aws), headers, "tasks/result", {"taskId": task_id})
            # The task's place under STRATUS_MAX_TASKS_PER_PRINCIPAL=1 is free again.
            await _start_task(http, _url(aws), headers, "where", {})
    assert task["status"] == "failed"
    assert task["statusMessage"] == "The task's run stopped before it ended (its worker crashed or timed out)"
    assert ended["error"]["code"] == INTERNAL_ERROR
    assert aws.pools[SWEEPER].served  # the on-failure destination marked it


async def test_a_relayed_call_whose_worker_dies_ends_its_stream_with_an_internal_error(aws: LocalAws) -> None:
    """A call that could ask its client something runs in the task worker, its stream relayed through the store: a
    dead run's client gets an error response to its request, with nothing of the failure in it."""
    answer: dict[str, Any] | None = None
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            headers = await _session(http, _url(aws), {"elicitation": {}})
            call = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "die_asking", "arguments": {}},
            }
            response = await http.post(_url(aws), json=call, headers=headers)
            while True:
                assert response.status_code == 200, response.text
                events = sse_fields(response.text)
                answers = [json.loads(event["data"]) for event in events if event.get("data")]
                answer = next((message for message in answers if message.get("id") == 7), None)
                if answer is not None:
                    break
                last = {"last-event-id": events[-1]["id"]}
                response = await http.get(_url(aws), headers={**headers, **last})
    assert answer == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": INTERNAL_ERROR, "message": "The call stopped before it ended"},
    }
