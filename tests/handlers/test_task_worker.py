"""Tasks on Lambda: the app hands each task to the worker function by an asynchronous invoke, and the worker's
handler, run in-process here against the real Redis, carries it to its end for any container to report."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest
import redis
from botocore.stub import ANY, Stubber

from stratus import Settings
from stratus.composition import stores_for
from stratus.handlers import sweeper, task_worker
from stratus.handlers.task_worker import LambdaLauncher
from stratus.stores.records import TaskRecord
from stratus.stores.task_records import RelayedCall
from stratus.transport.app import build_app
from tests.fixtures.apps import shared
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.wire import HandshakeSession, McpHttp

pytestmark = pytest.mark.anyio
WORKER = "stratus-task-worker"


@dataclass
class Deployment:
    settings: Settings
    stubber: Stubber
    session: HandshakeSession


@pytest.fixture
def environment(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    variables = {
        "STRATUS_APP": "tests.fixtures.apps:shared",
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"tasks-{secrets.token_hex(4)}",
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_TASK_WORKER": WORKER,
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
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
    with Stubber(client) as stubber:
        app = build_app(shared, settings, task_launcher=LambdaLauncher(WORKER, client=client))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            session = await McpHttp(http).initialize("2025-11-25")
            yield Deployment(settings, stubber, session)
        await app.shutdown()


def invoked(task_id: str | Any = ANY) -> dict[str, Any]:
    payload = ANY if task_id is ANY else json.dumps({"stratusTask": task_id}).encode()
    return {"FunctionName": WORKER, "InvocationType": "Event", "Payload": payload}


async def test_a_task_is_run_by_the_worker_invocation_and_reported_by_the_app(deployment: Deployment) -> None:
    deployment.stubber.add_response("invoke", {"StatusCode": 202}, invoked())
    created = await deployment.session.request(
        "tools/call", {"name": "total", "arguments": {"values": [4, 5]}, "task": {}}
    )
    task_id = created.json()["result"]["task"]["taskId"]
    deployment.stubber.assert_no_pending_responses()
    polled = await deployment.session.request("tasks/get", {"taskId": task_id})
    assert polled.json()["result"]["status"] == "working"  # nothing ran it in this process

    # The worker's own invocation: its handler, on its own event loop (a thread here, another container there).
    outcome = await asyncio.to_thread(task_worker.handler, {"stratusTask": task_id}, None)
    assert outcome == {"ran": True, "taskId": task_id}

    fetched = await deployment.session.request("tasks/result", {"taskId": task_id})
    assert fetched.json()["result"]["structuredContent"] == {"result": 9}


async def test_a_task_the_worker_cannot_be_invoked_for_fails_at_once_with_a_clear_error(
    deployment: Deployment,
) -> None:
    deployment.stubber.add_client_error("invoke", "ResourceNotFoundException", "Function not found: secret-arn")
    refused = await deployment.session.request(
        "tools/call", {"name": "total", "arguments": {"values": [1]}, "task": {}}
    )
    error = refused.json()["error"]
    assert error["code"] == -32603
    assert error["message"].startswith("The task could not be started (reference ")
    assert "secret-arn" not in refused.text


def test_the_worker_handler_ignores_an_event_without_a_task(environment: dict[str, str]) -> None:
    assert task_worker.handler({"source": "aws.events"}, None) == {"ran": False}


async def test_each_event_kind_runs_only_its_own_kind_of_record_and_warns_of_the_other(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    deployment.stubber.add_response("invoke", {"StatusCode": 202}, invoked())
    created = await deployment.session.request(
        "tools/call", {"name": "total", "arguments": {"values": [6, 7]}, "task": {}}
    )
    task_id = created.json()["result"]["task"]["taskId"]
    stores = stores_for(deployment.settings)
    call = RelayedCall(
        tool="total",
        arguments={"values": [1]},
        request_id=1,
        session_id=deployment.session.session_id,
        stream_token="t",
        principal=None,
    )
    await stores.tasks.create(
        TaskRecord(task_id="call-x", principal=None, status="working", request=call), ttl_seconds=60
    )
    before = {key: await stores.tasks.get(key) for key in (task_id, "call-x")}

    with caplog.at_level(logging.WARNING, logger="stratus.tasks"):
        crossed_call = await asyncio.to_thread(task_worker.handler, {"stratusCall": task_id}, None)
        crossed_task = await asyncio.to_thread(task_worker.handler, {"stratusTask": "call-x"}, None)
    assert crossed_call == {"ran": False, "callId": task_id}
    assert crossed_task == {"ran": False, "taskId": "call-x"}
    warned = [record for record in caplog.records if getattr(record, "record", None) in (task_id, "call-x")]
    assert [(vars(record)["expected"], vars(record)["found"]) for record in warned] == [
        ("RelayedCall", "TaskRequest"),
        ("TaskRequest", "RelayedCall"),
    ]
    assert {key: await stores.tasks.get(key) for key in (task_id, "call-x")} == before  # both records untouched

    # The task was left working, not stuck: its own event still runs it.
    assert await asyncio.to_thread(task_worker.handler, {"stratusTask": task_id}, None) == {
        "ran": True,
        "taskId": task_id,
    }
    fetched = await deployment.session.request("tasks/result", {"taskId": task_id})
    assert fetched.json()["result"]["structuredContent"] == {"result": 13}
    await stores.aclose()


def _failure_record(task_id: str, condition: str = "RetriesExhausted") -> dict[str, Any]:
    """Lambda's record of a task worker launch that failed, as its on-failure destination (the sweeper) gets it."""
    return {
        "version": "1.0",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "requestContext": {
            "requestId": "e4b46cbf-0000-0000-0000-a18cdf61200e",
            "functionArn": f"arn:aws:lambda:us-east-1:123456789012:function:{WORKER}:$LATEST",
            "condition": condition,
            "approximateInvokeCount": 1,
        },
        "requestPayload": {"stratusTask": task_id},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "responsePayload": {"errorMessage": "RequestId: e4b46cbf Error: Runtime exited with error: exit status 1"},
    }


async def test_a_failure_record_fails_a_working_task_once_and_tells_its_client_nothing_of_the_error(
    deployment: Deployment,
) -> None:
    deployment.stubber.add_response("invoke", {"StatusCode": 202}, invoked())
    created = await deployment.session.request(
        "tools/call", {"name": "total", "arguments": {"values": [1]}, "task": {}}
    )
    task_id = created.json()["result"]["task"]["taskId"]

    record = _failure_record(task_id)
    assert await asyncio.to_thread(sweeper.handler, record, None) == {"markedFailed": 1}
    assert await asyncio.to_thread(sweeper.handler, record, None) == {"markedFailed": 0}  # delivered again
    assert await asyncio.to_thread(task_worker.handler, {"stratusTask": task_id}, None) == {
        "ran": False,
        "taskId": task_id,
    }  # a late delivery of the launch finds it failed: the tool does not run

    polled = (await deployment.session.request("tasks/get", {"taskId": task_id})).json()["result"]
    assert (polled["status"], polled["statusMessage"]) == (
        "failed",
        "The task's run stopped before it ended (its worker crashed or timed out)",
    )
    error = (await deployment.session.request("tasks/result", {"taskId": task_id})).json()["error"]
    assert error["code"] == -32603 and "exit status" not in json.dumps(error)


async def test_a_failure_record_for_a_task_that_completed_changes_nothing(deployment: Deployment) -> None:
    deployment.stubber.add_response("invoke", {"StatusCode": 202}, invoked())
    created = await deployment.session.request(
        "tools/call", {"name": "total", "arguments": {"values": [2]}, "task": {}}
    )
    task_id = created.json()["result"]["task"]["taskId"]
    await asyncio.to_thread(task_worker.handler, {"stratusTask": task_id}, None)

    for condition in ("RetriesExhausted", "EventAgeExceeded"):
        assert await asyncio.to_thread(sweeper.handler, _failure_record(task_id, condition), None) == {
            "markedFailed": 0
        }
    fetched = await deployment.session.request("tasks/result", {"taskId": task_id})
    assert fetched.json()["result"]["structuredContent"] == {"result": 2}


async def test_a_launch_that_aged_out_before_any_delivery_ran_fails_its_task_as_never_started(
    deployment: Deployment,
) -> None:
    deployment.stubber.add_response("invoke", {"StatusCode": 202}, invoked())
    created = await deployment.session.request(
        "tools/call", {"name": "total", "arguments": {"values": [3]}, "task": {}}
    )
    task_id = created.json()["result"]["task"]["taskId"]

    aged = _failure_record(task_id, "EventAgeExceeded")
    assert await asyncio.to_thread(sweeper.handler, aged, None) == {"markedFailed": 1}
    polled = (await deployment.session.request("tasks/get", {"taskId": task_id})).json()["result"]
    assert (polled["status"], polled["statusMessage"]) == ("failed", "The task was not started in time")
