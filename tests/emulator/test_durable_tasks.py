"""Durable tasks through `stratus local` (template.yaml with DurableTasks=true, two containers per function): the
durable task worker runs against the local durable execution service (the official testing SDK's), so a task's
execution replays, suspends on its question with no container held and nothing billed, resumes through the callback
the client's answer completes, and is stopped by a cancel. The emulator's Lambda API holds durable starts to AWS's
rules: a qualified ARN, one execution per name."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import boto3
import httpx
import pytest
from botocore.exceptions import ClientError

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import TEMPLATE, serving
from tests.fixtures.sdk_sign_in import SCRIPTS, sdk_python
from tests.fixtures.wire import BASE_HEADERS, stateless_meta

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
WORKER = "stratus-local-DurableTaskWorkerFunction"
SWEEPER = "stratus-local-SweeperFunction"
EXTENSION = "io.modelcontextprotocol/tasks"
META = stateless_meta(
    **{"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}, "elicitation": {}}}
)
BOUND = 30.0
TASK_CLIENT = SCRIPTS / "python_130_task_approval.py"


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE, parameters={"DurableTasks": "true"}, app="tests.fixtures.durable_apps:server") as aws:
        yield aws


@pytest.fixture
def lambda_api(stack: LocalAws, aws_credentials: None) -> Iterator[Any]:
    """A boto3 Lambda client on the emulator's Lambda API, with the developer's credentials (no role binds them)."""
    client = _lambda_api(stack)
    yield client
    client.close()


def _lambda_api(stack: LocalAws) -> Any:
    return boto3.client("lambda", endpoint_url=stack.url("Invoke"), region_name="us-east-1")


async def _request(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> httpx.Response:
    named = params.get("name") or params.get("taskId")
    headers = {**BASE_HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if isinstance(named, str):
        headers["mcp-name"] = named
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    return await http.post(url, json=body, headers=headers)


async def _call(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    answered = await _request(http, url, method, params)
    assert answered.status_code == 200, answered.text
    result: dict[str, Any] = answered.json()["result"]
    return result


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(BOUND):
        while not condition():  # noqa: ASYNC110 - the emulator's state, on its own thread; bounded by fail_after
            await anyio.sleep(0.02)


async def _status_after(
    http: httpx.AsyncClient, url: str, task_id: str, leaving: str, within: float = BOUND
) -> dict[str, Any]:
    """The task once it is no longer `leaving` (its run is another function's invocation: polled, at most `within`
    seconds)."""
    with anyio.fail_after(within):
        while (task := await _call(http, url, "tasks/get", {"taskId": task_id}))["status"] == leaving:  # noqa: ASYNC110
            await anyio.sleep(0.1)  # a client polling tasks/get, at a tenth of its poll interval
    return task


async def test_a_task_that_asks_is_suspended_without_a_container_and_resumed_by_the_answer(stack: LocalAws) -> None:
    url, worker = f"{stack.url('ServerlessHttpApi')}/mcp", stack.pools[WORKER]
    billed = stack.bill.summary().get(WORKER, {}).get("invocations", 0)
    async with httpx.AsyncClient(timeout=BOUND) as http:
        task_id = (await _call(http, url, "tools/call", {"name": "approve", "arguments": {}}))["taskId"]
        waiting = await _status_after(http, url, task_id, "working")
        assert (waiting["status"], list(waiting["inputRequests"])) == ("input_required", ["approval"])
        # The execution waits on its callback: no invocation of the worker runs, none is billed.
        await _until(lambda: worker.busy == 0)
        asked = stack.bill.summary()[WORKER]["invocations"]
        assert asked == billed + 1

        answer = {"action": "accept", "content": {"ok": True}}
        await _call(http, url, "tasks/update", {"taskId": task_id, "inputResponses": {"approval": answer}})
        done = await _status_after(http, url, task_id, "working")

    assert (done["status"], done["result"]["content"][0]["text"]) == ("completed", "done")
    await _until(lambda: worker.busy == 0)  # billed once the invocation has ended, after the task's record
    assert stack.bill.summary()[WORKER]["invocations"] == asked + 1  # the replay after the callback


async def test_cancelling_a_waiting_task_stops_its_execution(stack: LocalAws, lambda_api: Any) -> None:
    url, worker = f"{stack.url('ServerlessHttpApi')}/mcp", stack.pools[WORKER]
    async with httpx.AsyncClient(timeout=BOUND) as http:
        task_id = (await _call(http, url, "tools/call", {"name": "approve", "arguments": {}}))["taskId"]
        assert (await _status_after(http, url, task_id, "working"))["status"] == "input_required"
        await _until(lambda: worker.busy == 0)
        runs, sweeps = len(worker.served), len(stack.pools[SWEEPER].served)

        await _call(http, url, "tasks/cancel", {"taskId": task_id})
        cancelled = await _call(http, url, "tasks/get", {"taskId": task_id})
        # The stopped execution's dead letter reaches the sweeper, which leaves a cancelled task cancelled.
        await _until(lambda: len(stack.pools[SWEEPER].served) == sweeps + 1 and stack.pools[SWEEPER].busy == 0)
        still = await _call(http, url, "tasks/get", {"taskId": task_id})

    listed = lambda_api.list_durable_executions_by_function(FunctionName=WORKER, DurableExecutionName=task_id)
    assert cancelled["status"] == still["status"] == "cancelled"
    assert [execution["Status"] for execution in listed["DurableExecutions"]] == ["STOPPED"]
    assert len(worker.served) == runs  # nothing ran after the stop


async def test_a_worker_killed_in_a_step_is_invoked_again_and_its_completed_step_does_not_run_again(
    stack: LocalAws, tmp_path: Path
) -> None:
    url, ran = f"{stack.url('ServerlessHttpApi')}/mcp", tmp_path / "ran"
    async with httpx.AsyncClient(timeout=BOUND) as http:
        task_id = (await _call(http, url, "tools/call", {"name": "crash_once", "arguments": {"path": str(ran)}}))[
            "taskId"
        ]
        done = await _status_after(http, url, task_id, "working")

    assert (done["status"], done["result"]["content"][0]["text"]) == ("completed", "both")
    assert ran.read_text().splitlines() == ["first", "second"]  # the first step once, though its process died after
    assert (tmp_path / "ran.crashed").exists()


def test_a_durable_start_needs_a_qualified_arn_and_a_name_starts_one_execution(lambda_api: Any) -> None:
    start = {"InvocationType": "Event", "Payload": json.dumps({"source": "test"}).encode()}

    with pytest.raises(ClientError) as unqualified:
        lambda_api.invoke(FunctionName=WORKER, DurableExecutionName="once", **start)
    first = lambda_api.invoke(FunctionName=f"{WORKER}:live", DurableExecutionName="once", **start)
    first["Payload"].read()  # read to its end: an unread body keeps its connection out of the pool, never closed
    with pytest.raises(ClientError) as again:
        lambda_api.invoke(FunctionName=f"{WORKER}:live", DurableExecutionName="once", **start)

    assert unqualified.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert first["StatusCode"] == 202
    assert again.value.response["Error"]["Code"] == "DurableExecutionAlreadyStartedException"


SHORT_SCALE = 3 / 900
"""The durable service's clock for `short_stack`: the shortest execution timeout the template allows (15 minutes) in
three seconds."""


@pytest.fixture(scope="module")
def short_stack() -> Iterator[LocalAws]:
    parameters = {"DurableTasks": "true", "DurableExecutionTimeoutSeconds": "900"}
    app = "tests.fixtures.durable_apps:server"
    with serving(TEMPLATE, parameters=parameters, app=app, durable_time_scale=SHORT_SCALE) as aws:
        yield aws


async def test_a_task_whose_execution_times_out_while_it_waits_ends_failed_through_the_dead_letter_queue(
    short_stack: LocalAws, aws_credentials: None
) -> None:
    stack = short_stack
    url, worker, sweeper = f"{stack.url('StreamingFunctionUrl')}/mcp", stack.pools[WORKER], stack.pools[SWEEPER]
    async with httpx.AsyncClient(timeout=BOUND) as http:
        task_id = (await _call(http, url, "tools/call", {"name": "approve", "arguments": {}}))["taskId"]
        assert (await _status_after(http, url, task_id, "working"))["status"] == "input_required"
        await _until(lambda: worker.busy == 0)
        runs = len(worker.served)
        # No one answers: the execution times out (15 minutes on the service's clock), its event goes to the
        # dead-letter queue, and the queue's mapping hands it to the sweeper, which marks the task failed.
        failed = await _status_after(http, url, task_id, "input_required")

    lambda_api = _lambda_api(stack)
    listed = lambda_api.list_durable_executions_by_function(FunctionName=WORKER, DurableExecutionName=task_id)
    lambda_api.close()
    assert [execution["Status"] for execution in listed["DurableExecutions"]] == ["TIMED_OUT"]
    message = "The task's run stopped before it ended (its worker crashed or timed out)"
    assert (failed["status"], failed["statusMessage"]) == ("failed", message)
    assert failed["error"] == {"code": -32603, "message": message}  # Lambda's "Execution timed out" stays out
    assert len(worker.served) == runs and len(sweeper.served) == 1  # nothing ran the task again


PART_SECONDS = 20.0
"""A part's work: ten minutes, at the worker's timeout of 30 s for 15 minutes (DurableTaskWorkerTimeout)."""
DAY_SCALE = 10 / 86_400
"""The durable service's clock: a day in ten seconds (`Options.durable_time_scale`)."""


@pytest.fixture(scope="module")
def long_stack() -> Iterator[LocalAws]:
    parameters = {
        "DurableTasks": "true",
        "DurableTaskWorkerTimeout": "30",
        # Two weeks on the service's clock: the parts' minute of real time is six days on it.
        "DurableExecutionTimeoutSeconds": str(14 * 86_400),
    }
    app = "tests.fixtures.durable_apps:server"
    with serving(TEMPLATE, parameters=parameters, app=app, durable_time_scale=DAY_SCALE) as aws:
        yield aws


# Not `slow`: its bill is the point, and the slow tests run at the lowest CPU priority beside the others, where a
# replay's loading can take longer than the 10 s an invocation leaves after its 20 s step.
@pytest.mark.parametrize("door", ["ServerlessHttpApi", "StreamingFunctionUrl"])
async def test_three_ten_minute_steps_and_a_day_long_approval_run_each_step_once_and_bill_the_steps(
    long_stack: LocalAws, tmp_path: Path, door: str
) -> None:
    stack, ran = long_stack, tmp_path / "ran"
    url, worker = f"{stack.url(door)}/mcp", stack.pools[WORKER]
    before = stack.bill.summary().get(WORKER, {"invocations": 0, "billedMs": 0})
    arguments = {"path": str(ran), "part_seconds": PART_SECONDS}
    async with httpx.AsyncClient(timeout=BOUND) as http:
        task_id = (await _call(http, url, "tools/call", {"name": "migrate_for_real", "arguments": arguments}))["taskId"]
        waiting = await _status_after(http, url, task_id, "working", within=4 * PART_SECONDS)
        assert waiting["status"] == "input_required" and ran.read_text().splitlines() == ["part-1", "part-2"]
        await _until(lambda: worker.busy == 0)
        waited = stack.bill.summary()[WORKER]
        with anyio.fail_after(2 * 86_400 * DAY_SCALE):
            await anyio.sleep(86_400 * DAY_SCALE)  # the person answers a day later, on the service's clock
        assert stack.bill.summary()[WORKER] == waited  # nothing ran, nothing billed, while the question waited

        answer = {"action": "accept", "content": {"ok": True}}
        await _call(http, url, "tasks/update", {"taskId": task_id, "inputResponses": {"approval": answer}})
        done = await _status_after(http, url, task_id, "working", within=3 * PART_SECONDS)
        await _until(lambda: worker.busy == 0)

    assert (done["status"], done["result"]["content"][0]["text"]) == ("completed", "migrated")
    assert ran.read_text().splitlines() == ["part-1", "part-2", "part-3"]  # each part's side effect once
    # The steps' own time, plus what each invocation adds: its container's init (billed once: 0.3 s, most of it the
    # SDK's boto3), the replays' checkpoints and the store's round trips: 0.7 s over three invocations measured alone,
    # 1.2 % of 20-second steps (of ten-minute steps, 0.04 %).
    after = stack.bill.summary()[WORKER]
    invocations, billed = after["invocations"] - before["invocations"], after["billedMs"] - before["billedMs"]
    steps = 3 * PART_SECONDS * 1000
    assert invocations == 3  # part 1; part 2 and the question; part 3 after the answer
    assert billed <= steps * 1.02, f"the worker billed {billed} ms for {steps:.0f} ms of steps"


async def test_the_official_python_sdk_130_task_client_takes_an_asking_task_to_its_end_through_the_http_api(
    stack: LocalAws,
) -> None:
    python = sdk_python("python-1.30")
    with anyio.fail_after(90):
        ran = await anyio.run_process(
            [python, "-I", str(TASK_CLIENT), f"{stack.url('ServerlessHttpApi')}/mcp", "approve"],
            check=False,
            stdin=subprocess.DEVNULL,
        )
    printed = ran.stdout.decode().splitlines()
    assert ran.returncode == 0, ran.stderr.decode()[-3000:]
    assert "ASKED Approve the export?" in printed and "STATUS input_required" in printed
    assert printed[-1] == "RESULT done"
