"""The durable task worker runs a task's whole life as one durable execution, in rounds: each round a checkpointed
step, a question a suspended wait on a callback, a step that might not fit in the invocation a new invocation. Under
the official testing SDK's in-process runner (the durable execution service's replay, checkpoints, callbacks and
step records, in this process, its clock skipping the waits)."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest
import redis
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.lambda_service import OperationStatus
from aws_durable_execution_sdk_python_testing import DurableFunctionTestResult, DurableFunctionTestRunner
from botocore.stub import Stubber
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from stratus import Settings
from stratus.composition import stores_for
from stratus.handlers import durable_worker, sweeper
from stratus.handlers.durable_launcher import DurableLauncher
from stratus.handlers.task_worker import LambdaLauncher, settings_for_invocation, task_launcher
from stratus.otel_tracing import OtelTracing
from stratus.settings import SettingsError
from stratus.transport.app import build_app
from tests.fixtures.durable_apps import clock, runs, server
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.wire import HandshakeSession, McpHttp, stateless_meta

pytestmark = pytest.mark.anyio
WORKER = "stratus-task-worker"
DURABLE_FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:stratus-durable-worker"
DURABLE = f"{DURABLE_FUNCTION}:live"
EXTENSION = "io.modelcontextprotocol/tasks"


@dataclass
class Deployment:
    settings: Settings
    stubber: Stubber
    session: HandshakeSession
    mcp: McpHttp
    sent: list[tuple[str, dict[str, Any]]]
    """Each Lambda API call's operation and parameters, as the client was given them."""


@pytest.fixture
def environment(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    variables = {
        "STRATUS_APP": "tests.fixtures.durable_apps:server",
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"durable-{secrets.token_hex(4)}",
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_TASK_WORKER": WORKER,
        "STRATUS_TASK_WORKER_DURABLE": DURABLE,
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    runs.clear()
    clock.now, clock.invocations = 0.0, 0
    yield variables
    client = redis.Redis.from_url(variables["STRATUS_STORE"])
    keys = list(client.scan_iter(match=f"{variables['STRATUS_STORE_PREFIX']}:*"))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture
async def deployment(environment: dict[str, str]) -> AsyncIterator[Deployment]:
    settings = Settings.from_env(environment)
    client = boto3.client("lambda")
    sent: list[tuple[str, dict[str, Any]]] = []
    client.meta.events.register(
        "provide-client-params.lambda.*", lambda params, model, **_: sent.append((model.name, dict(params)))
    )
    launcher = DurableLauncher(DURABLE, LambdaLauncher(WORKER, client=client), client=client)
    with Stubber(client) as stubber:
        app = build_app(server, settings, task_launcher=launcher)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            mcp = McpHttp(http)
            session = await mcp.initialize("2025-11-25")
            yield Deployment(settings, stubber, session, mcp, sent)
        await app.shutdown()


async def create_task(deployment: Deployment, tool: str, arguments: dict[str, Any]) -> str:
    deployment.stubber.add_response("invoke", {"StatusCode": 202})
    created = await deployment.session.request("tools/call", {"name": tool, "arguments": arguments, "task": {}})
    task_id: str = created.json()["result"]["task"]["taskId"]
    return task_id


@contextmanager
def durable_runner(handler: Any) -> Iterator[DurableFunctionTestRunner]:
    runner = DurableFunctionTestRunner(handler=handler)
    try:
        yield runner
    finally:
        runner.close()  # type: ignore[no-untyped-call]
        runner._scheduler._loop.close()  # testing SDK 1.4.0 stops its scheduler's event loop without closing it


def execute(handler: Any, event: dict[str, Any]) -> DurableFunctionTestResult:
    """One durable execution of a launch's event, to its end, in the testing SDK's runner."""
    with durable_runner(handler) as runner:
        return runner.run(input=json.dumps(event), execution_timeout=60)


TASKS_META = stateless_meta(
    **{"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}, "elicitation": {}}}
)


@durable_execution
def timed_worker(event: Any, context: DurableContext) -> dict[str, Any]:
    """The worker, each invocation given 15 minutes on the fixture's clock (the `migrate` tool's parts advance it)."""
    context.lambda_context = clock.invocation(context.lambda_context)
    return durable_worker.run_launch(event, context, lambda: settings_for_invocation(None))


async def create_stateless_task(deployment: Deployment, tool: str) -> str:
    """A 2026-07-28 task of `tool` from a client that declares the tasks extension and elicitation."""
    deployment.stubber.add_response("invoke", {"StatusCode": 202})
    created = await deployment.mcp.stateless("tools/call", {"name": tool, "arguments": {}, "_meta": TASKS_META})
    task_id: str = created.json()["result"]["taskId"]
    return task_id


async def stateless(deployment: Deployment, method: str, task_id: str) -> dict[str, Any]:
    answered = await deployment.mcp.stateless(method, {"taskId": task_id, "_meta": TASKS_META})
    result: dict[str, Any] = answered.json()["result"]
    return result


async def _approve(deployment: Deployment, task_id: str, callback: str) -> str:
    """Answer the task's `approval` question with yes; the callback id the serving function sent Lambda to resume it."""
    deployment.stubber.add_response("send_durable_execution_callback_success", {})
    answer = {"action": "accept", "content": {"ok": True}}
    await deployment.mcp.stateless(
        "tasks/update", {"taskId": task_id, "inputResponses": {"approval": answer}, "_meta": TASKS_META}
    )
    operation, params = deployment.sent[-1]
    assert operation == "SendDurableExecutionCallbackSuccess"
    sent: str = params["CallbackId"]
    return sent


async def test_a_task_runs_to_completion_in_one_recorded_round(deployment: Deployment) -> None:
    task_id = await create_task(deployment, "export", {"name": "ledger"})

    result = await asyncio.to_thread(execute, durable_worker.handler, {"stratusTask": task_id})

    assert result.status.value == "SUCCEEDED"
    assert json.loads(result.result or "null") == {"ended": "ended", "rounds": 1, "taskId": task_id}
    assert [operation.name for operation in result.operations] == ["run-0"]
    assert result.get_step("run-0").status is OperationStatus.SUCCEEDED
    assert runs == ["ledger"]
    fetched = await deployment.session.request("tasks/result", {"taskId": task_id})
    assert fetched.json()["result"]["content"][0]["text"] == "exported ledger"


async def test_a_replay_after_the_run_returns_its_record_and_runs_nothing_again(deployment: Deployment) -> None:
    task_id = await create_task(deployment, "export", {"name": "ledger"})
    invocations: list[dict[str, Any]] = []

    @durable_execution
    def suspending(event: Any, context: DurableContext) -> dict[str, Any]:
        # The worker's own run, then a wait: the execution suspends and Lambda invokes it again, which replays it.
        outcome = durable_worker.run_launch(event, context, lambda: settings_for_invocation(None))
        invocations.append(outcome)
        context.wait(Duration.from_seconds(1), name="pause")
        return outcome

    result = await asyncio.to_thread(execute, suspending, {"stratusTask": task_id})

    assert result.status.value == "SUCCEEDED"
    ended = {"ended": "ended", "rounds": 1, "taskId": task_id}
    assert invocations == [ended] * 2  # the replay got the recorded round, not a new run
    assert runs == ["ledger"]  # the tool ran once


async def test_a_tool_that_fails_ends_its_task_failed_with_its_message(deployment: Deployment) -> None:
    task_id = await create_task(deployment, "refuse", {})

    result = await asyncio.to_thread(execute, durable_worker.handler, {"stratusTask": task_id})

    assert json.loads(result.result or "null") == {"ended": "ended", "rounds": 1, "taskId": task_id}
    polled = (await deployment.session.request("tasks/get", {"taskId": task_id})).json()["result"]
    assert polled["status"] == "failed"
    error = (await deployment.session.request("tasks/result", {"taskId": task_id})).json()["error"]
    assert (error["code"], error["message"]) == (-32602, "Invalid params: nothing to export")


async def test_a_round_that_keeps_failing_is_tried_three_times_then_marks_its_task_failed(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_id = await create_task(deployment, "export", {"name": "ledger"})
    # A deployment whose app does not load: each attempt of the round raises.
    monkeypatch.setenv("STRATUS_APP", "tests.fixtures.durable_apps:no_such_server")

    result = await asyncio.to_thread(execute, durable_worker.handler, {"stratusTask": task_id})

    assert json.loads(result.result or "null") == {
        "ended": "failed",
        "rounds": 1,
        "taskId": task_id,
        "markedFailed": True,
    }
    assert [operation.name for operation in result.operations] == ["run-0", "mark-failed"]
    run = result.get_step("run-0")
    assert (run.status, run.attempt) == (OperationStatus.FAILED, durable_worker.ROUND_ATTEMPTS)
    assert runs == []
    polled = (await deployment.session.request("tasks/get", {"taskId": task_id})).json()["result"]
    assert (polled["status"], polled["statusMessage"]) == (
        "failed",
        "The task's run stopped before it ended (its worker crashed or timed out)",
    )


async def test_a_round_that_died_is_run_again_and_the_steps_it_completed_do_not_run_again(
    deployment: Deployment,
) -> None:
    task_id = await create_stateless_task(deployment, "migrate")
    attempts: list[int] = []

    def settings_once_unreachable() -> Settings:
        # The second round's first attempt dies (as when SSM is out of reach), after the first round ran part 1.
        attempts.append(len(runs))
        if len(attempts) == 2:
            raise ConnectionError("SSM is out of reach")
        return settings_for_invocation(None)

    @durable_execution
    def flaky(event: Any, context: DurableContext) -> dict[str, Any]:
        context.lambda_context = clock.invocation(context.lambda_context)
        return durable_worker.run_launch(event, context, settings_once_unreachable)

    with durable_runner(flaky) as runner:
        arn = await asyncio.to_thread(runner.run_async, input=json.dumps({"stratusTask": task_id}))
        callback = await asyncio.to_thread(runner.wait_for_callback, arn, "answers-1", 30)
        assert runs == ["part-1", "part-2"]  # part 1 ran once, though the round after it died once
        assert await _approve(deployment, task_id, callback) == callback
        await asyncio.to_thread(runner.send_callback_success, callback, b"{}")
        result = await asyncio.to_thread(runner.wait_for_result, arn, 30)

    assert result.status.value == "SUCCEEDED"
    assert result.get_step("run-1").attempt == 2
    assert runs == ["part-1", "part-2", "part-3"]


async def test_an_event_without_a_task_runs_nothing(environment: dict[str, str]) -> None:
    result = await asyncio.to_thread(execute, durable_worker.handler, {"source": "aws.events"})
    assert json.loads(result.result or "null") == {"ended": "skipped", "rounds": 0}
    assert result.operations == []


# -- the launcher ----------------------------------------------------------------------------------------------------


async def test_a_task_starts_a_durable_execution_of_the_alias_named_by_the_task(deployment: Deployment) -> None:
    task_id = await create_task(deployment, "export", {"name": "ledger"})

    deployment.stubber.assert_no_pending_responses()
    assert deployment.sent == [
        (
            "Invoke",
            {
                "FunctionName": DURABLE,
                "InvocationType": "Event",
                "DurableExecutionName": task_id,
                "Payload": json.dumps({"stratusTask": task_id}).encode(),
            },
        )
    ]
    assert runs == []  # nothing ran it in this process


async def test_a_start_sent_again_finds_its_execution_started_and_does_not_fail(deployment: Deployment) -> None:
    task_id = await create_task(deployment, "export", {"name": "ledger"})
    stores = stores_for(deployment.settings)
    record = await stores.tasks.get(task_id)
    await stores.aclose()
    assert record is not None
    deployment.stubber.add_client_error(
        "invoke", "DurableExecutionAlreadyStartedException", "The durable execution has already been started"
    )
    launcher = DurableLauncher(DURABLE, LambdaLauncher(WORKER), client=_client_of(deployment))

    await launcher.launch_record(record)

    assert deployment.sent[-1][1]["DurableExecutionName"] == task_id


async def test_answers_complete_the_callback_the_execution_waits_on_and_it_goes_on_to_the_end(
    deployment: Deployment,
) -> None:
    task_id = await create_stateless_task(deployment, "approve")

    with durable_runner(timed_worker) as runner:
        arn = await asyncio.to_thread(runner.run_async, input=json.dumps({"stratusTask": task_id}))
        callback = await asyncio.to_thread(runner.wait_for_callback, arn, "answers-0", 30)
        waiting = await stateless(deployment, "tasks/get", task_id)
        assert (waiting["status"], list(waiting["inputRequests"])) == ("input_required", ["approval"])

        assert await _approve(deployment, task_id, callback) == callback
        # No new execution: the waiting one's callback is completed, as Lambda's API is asked to.
        assert [operation for operation, _ in deployment.sent] == ["Invoke", "SendDurableExecutionCallbackSuccess"]
        assert deployment.sent[-1][1] == {"CallbackId": callback, "Result": b"{}"}
        await asyncio.to_thread(runner.send_callback_success, callback, b"{}")
        result = await asyncio.to_thread(runner.wait_for_result, arn, 30)

    assert json.loads(result.result or "null") == {"ended": "ended", "rounds": 2, "taskId": task_id}
    assert [operation.name for operation in result.operations] == ["run-0", "answers-0", "listen-0", "run-1"]
    finished = await stateless(deployment, "tasks/get", task_id)
    assert (finished["status"], finished["result"]["content"][0]["text"]) == ("completed", "done")
    assert runs == ["approved=True"]


async def test_a_task_of_three_ten_minute_steps_and_a_day_long_question_runs_in_three_invocations(
    deployment: Deployment,
) -> None:
    task_id = await create_stateless_task(deployment, "migrate")

    with durable_runner(timed_worker) as runner:
        arn = await asyncio.to_thread(runner.run_async, input=json.dumps({"stratusTask": task_id}))
        callback = await asyncio.to_thread(runner.wait_for_callback, arn, "answers-1", 30)
        # Part 2 would not have fit in the five minutes part 1 left of the first invocation: it ran in a second one.
        assert (runs, clock.invocations) == (["part-1", "part-2"], 2)
        clock.now += 86_400.0  # the person answers a day later; nothing ran meanwhile
        assert await _approve(deployment, task_id, callback) == callback
        await asyncio.to_thread(runner.send_callback_success, callback, b"{}")
        result = await asyncio.to_thread(runner.wait_for_result, arn, 30)

    assert json.loads(result.result or "null") == {"ended": "ended", "rounds": 3, "taskId": task_id}
    assert [operation.name for operation in result.operations] == [
        "run-0",
        "resume-0",
        "run-1",
        "answers-1",
        "listen-1",
        "run-2",
    ]
    assert runs == ["part-1", "part-2", "part-3"]  # each part once, 30 minutes of work past one 15-minute invocation
    assert clock.invocations == 3
    finished = await stateless(deployment, "tasks/get", task_id)
    assert (finished["status"], finished["result"]["content"][0]["text"]) == ("completed", "migrated")


async def test_a_step_longer_than_an_invocation_fails_its_task_naming_the_limit(deployment: Deployment) -> None:
    task_id = await create_stateless_task(deployment, "overlong")

    @durable_execution
    def short_invocations(event: Any, context: DurableContext) -> dict[str, Any]:
        # Invocations of 1.5 s: the deadline (less its 0.5 s margin) cuts the step after one real second.
        context.lambda_context = clock.invocation(context.lambda_context, timeout=1.5)
        return durable_worker.run_launch(event, context, lambda: settings_for_invocation(None))

    result = await asyncio.to_thread(execute, short_invocations, {"stratusTask": task_id})

    assert json.loads(result.result or "null") == {"ended": "ended", "rounds": 1, "taskId": task_id}
    failed = await stateless(deployment, "tasks/get", task_id)
    assert failed["status"] == "failed"
    assert failed["error"] == {
        "code": -32603,
        "message": "Step 'whole' did not finish within the 2 s one invocation of the durable task worker may run "
        "(its function's Timeout, which Lambda caps at 900 s): split it into steps that each finish well within it",
    }


async def test_cancelling_a_task_that_waits_for_answers_stops_its_execution_and_no_later_step_runs(
    deployment: Deployment,
) -> None:
    task_id = await create_stateless_task(deployment, "migrate")

    with durable_runner(timed_worker) as runner:
        arn = await asyncio.to_thread(runner.run_async, input=json.dumps({"stratusTask": task_id}))
        await asyncio.to_thread(runner.wait_for_callback, arn, "answers-1", 30)
        live = {"DurableExecutionArn": arn, "DurableExecutionName": task_id, "FunctionArn": DURABLE_FUNCTION}
        deployment.stubber.add_response(
            "list_durable_executions_by_function",
            {"DurableExecutions": [{**live, "Status": "RUNNING", "StartTimestamp": "2026-01-01T00:00:00Z"}]},
        )
        deployment.stubber.add_response("stop_durable_execution", {"StopTimestamp": "2026-01-01T00:00:01Z"})

        assert (await stateless(deployment, "tasks/cancel", task_id))["resultType"] == "complete"

        assert deployment.sent[-1] == ("StopDurableExecution", {"DurableExecutionArn": arn})
        await asyncio.to_thread(runner._executor.stop_execution, arn)  # what Lambda does with that request
        await asyncio.to_thread(runner.wait_for_result, arn, 30)
        history = await asyncio.to_thread(runner.get_execution_history, arn)

    assert history.events[-1].event_type == "ExecutionStopped"
    assert runs == ["part-1", "part-2"]  # part 3 never ran
    cancelled = await stateless(deployment, "tasks/get", task_id)
    assert cancelled["status"] == "cancelled"


async def test_cancelling_a_working_task_stops_its_execution(deployment: Deployment) -> None:
    task_id = await create_task(deployment, "export", {"name": "ledger"})
    execution = f"{DURABLE_FUNCTION}:7/durable-execution/{task_id}/0c3a9b5e-7f21-4d8e-a1f5-2b9c6d4e8a10"
    deployment.stubber.add_response(
        "list_durable_executions_by_function",
        {
            "DurableExecutions": [
                {
                    "DurableExecutionArn": execution,
                    "DurableExecutionName": task_id,
                    "FunctionArn": f"{DURABLE_FUNCTION}:7",
                    "Status": "RUNNING",
                    "StartTimestamp": "2026-01-01T00:00:00Z",
                }
            ]
        },
    )
    deployment.stubber.add_response("stop_durable_execution", {"StopTimestamp": "2026-01-01T00:00:01Z"})

    cancelled = await deployment.session.request("tasks/cancel", {"taskId": task_id})

    assert cancelled.json()["result"]["status"] == "cancelled"
    deployment.stubber.assert_no_pending_responses()
    assert deployment.sent[1:] == [
        (
            "ListDurableExecutionsByFunction",
            {
                "FunctionName": DURABLE_FUNCTION,
                "DurableExecutionName": task_id,
                "Statuses": ["RUNNING", "PAUSING", "PAUSED"],
            },
        ),
        ("StopDurableExecution", {"DurableExecutionArn": execution}),
    ]


async def test_a_stop_that_fails_still_cancels_the_task(deployment: Deployment) -> None:
    task_id = await create_task(deployment, "export", {"name": "ledger"})
    deployment.stubber.add_client_error("list_durable_executions_by_function", "AccessDeniedException", "denied")

    cancelled = await deployment.session.request("tasks/cancel", {"taskId": task_id})

    assert cancelled.json()["result"]["status"] == "cancelled"
    polled = (await deployment.session.request("tasks/get", {"taskId": task_id})).json()["result"]
    assert polled["status"] == "cancelled"


def _client_of(deployment: Deployment) -> Any:
    return deployment.stubber.client


def test_the_setting_selects_the_durable_launcher(environment: dict[str, str]) -> None:
    launcher = task_launcher(Settings.from_env(environment))
    assert isinstance(launcher, DurableLauncher)
    assert (launcher.function, getattr(launcher.calls, "function", None)) == (DURABLE, WORKER)
    plain = task_launcher(Settings.from_env({**environment, "STRATUS_TASK_WORKER_DURABLE": ""}))
    assert isinstance(plain, LambdaLauncher)


@pytest.mark.parametrize(
    ("variables", "problem"),
    [
        (
            {"STRATUS_TASK_WORKER_DURABLE": DURABLE_FUNCTION},
            f"STRATUS_TASK_WORKER_DURABLE={DURABLE_FUNCTION!r}: must name a version or alias of the function",
        ),
        (
            {"STRATUS_TASK_WORKER_DURABLE": "stratus-durable-worker"},
            "STRATUS_TASK_WORKER_DURABLE='stratus-durable-worker': must name a version or alias of the function",
        ),
        ({"STRATUS_TASK_WORKER": ""}, "STRATUS_TASK_WORKER_DURABLE needs STRATUS_TASK_WORKER"),
    ],
)
def test_a_durable_worker_setting_that_cannot_work_is_refused_at_start(
    environment: dict[str, str], variables: dict[str, str], problem: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({**environment, **variables})
    assert any(each.startswith(problem) for each in refused.value.problems)


# -- the dead-letter queue -------------------------------------------------------------------------------------------


def _dead_letters(*bodies: str) -> dict[str, Any]:
    """An SQS batch of the durable worker's dead-letter queue, as its event source mapping hands it to the sweeper:
    each message's body the execution's event, its attributes Lambda's."""
    return {
        "Records": [
            {
                "messageId": f"0a1b2c3d-0000-4000-8000-00000000000{index}",
                "receiptHandle": "AQEB",
                "body": body,
                "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1767225600000"},
                "messageAttributes": {
                    "RequestID": {"stringValue": "e4b46cbf-0000-0000-0000-a18cdf61200e", "dataType": "String"},
                    "ErrorCode": {"stringValue": "200", "dataType": "Number"},
                    "ErrorMessage": {"stringValue": "Execution timed out", "dataType": "String"},
                },
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:stratus-local-DurableTaskDeadLetters",
                "awsRegion": "us-east-1",
            }
            for index, body in enumerate(bodies)
        ]
    }


async def test_a_dead_letter_marks_its_working_task_failed_once(deployment: Deployment) -> None:
    task_id = await create_task(deployment, "export", {"name": "ledger"})
    batch = _dead_letters(json.dumps({"stratusTask": task_id}), "not json", json.dumps({"other": 1}))

    assert await asyncio.to_thread(sweeper.handler, batch, None) == {"markedFailed": 1}
    assert await asyncio.to_thread(sweeper.handler, batch, None) == {"markedFailed": 0}  # delivered again

    polled = (await deployment.session.request("tasks/get", {"taskId": task_id})).json()["result"]
    assert (polled["status"], polled["statusMessage"]) == (
        "failed",
        "The task's run stopped before it ended (its worker crashed or timed out)",
    )
    error = (await deployment.session.request("tasks/result", {"taskId": task_id})).json()["error"]
    assert error["code"] == -32603 and "Execution timed out" not in json.dumps(error)  # Lambda's error stays out


async def test_the_dead_letter_of_a_stopped_execution_leaves_its_cancelled_task_cancelled(
    deployment: Deployment,
) -> None:
    task_id = await create_task(deployment, "export", {"name": "ledger"})
    deployment.stubber.add_response("list_durable_executions_by_function", {"DurableExecutions": []})
    await deployment.session.request("tasks/cancel", {"taskId": task_id})

    assert await asyncio.to_thread(sweeper.handler, _dead_letters(json.dumps({"stratusTask": task_id})), None) == {
        "markedFailed": 0
    }
    polled = (await deployment.session.request("tasks/get", {"taskId": task_id})).json()["result"]
    assert polled["status"] == "cancelled"


# -- traces ----------------------------------------------------------------------------------------------------------

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


async def test_a_task_s_run_continues_the_trace_of_the_request_that_created_it(environment: dict[str, str]) -> None:
    """The launch carries the tools/call span's context to the durable execution, whose round's CONSUMER span is its
    child: one trace from the client's request to the worker's run (OpenTelemetry's SDK, its in-memory exporter)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = OtelTracing(provider)
    client = boto3.client("lambda")
    sent: list[tuple[str, dict[str, Any]]] = []
    client.meta.events.register(
        "provide-client-params.lambda.*", lambda params, model, **_: sent.append((model.name, dict(params)))
    )
    launcher = DurableLauncher(DURABLE, LambdaLauncher(WORKER, client=client), client=client, tracing=tracing)
    with Stubber(client) as stubber:
        app = build_app(server, Settings.from_env(environment), task_launcher=launcher, tracing=tracing)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            session = await McpHttp(http).initialize("2025-11-25")
            stubber.add_response("invoke", {"StatusCode": 202})
            params = {"name": "export", "arguments": {"name": "ledger"}, "task": {}}
            await session.request("tools/call", params, headers={"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"})
        await app.shutdown()
    ((_, invoked),) = [(operation, params) for operation, params in sent if operation == "Invoke"]
    event = json.loads(invoked["Payload"])

    @durable_execution
    def traced_worker(event: Any, context: DurableContext) -> dict[str, Any]:
        return durable_worker.run_launch(event, context, lambda: settings_for_invocation(None), tracing)

    result = await asyncio.to_thread(execute, traced_worker, event)

    assert json.loads(result.result or "null")["ended"] == "ended"
    spans = {span.name: span for span in exporter.get_finished_spans()}
    request, run = spans["tools/call export"], spans["task run"]
    assert request.context is not None and run.context is not None and run.parent is not None
    assert format(request.context.trace_id, "032x") == format(run.context.trace_id, "032x") == TRACE_ID
    assert run.parent.span_id == request.context.span_id and run.kind is SpanKind.CONSUMER
    assert set(event) == {"stratusTask", "stratusTrace"} and set(event["stratusTrace"]) == {"traceparent"}
    provider.shutdown()


async def test_a_relayed_call_s_launch_carries_the_current_span_and_none_without_tracing(aws_credentials: None) -> None:
    provider = TracerProvider()
    tracing = OtelTracing(provider)
    client = boto3.client("lambda", region_name="us-east-1")
    sent: list[dict[str, Any]] = []
    client.meta.events.register("provide-client-params.lambda.Invoke", lambda params, **_: sent.append(dict(params)))
    with Stubber(client) as stubber:
        for _ in range(2):
            stubber.add_response("invoke", {"StatusCode": 202})
        with tracing.request("tools/call ask", {}, {"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"}, {}):
            await LambdaLauncher(WORKER, client=client, tracing=tracing).launch_call("call-1")
        await LambdaLauncher(WORKER, client=client).launch_call("call-2")
    traced, plain = (json.loads(params["Payload"]) for params in sent)
    assert traced["stratusCall"] == "call-1" and traced["stratusTrace"]["traceparent"].startswith(f"00-{TRACE_ID}-")
    assert plain == {"stratusCall": "call-2"}
    provider.shutdown()
