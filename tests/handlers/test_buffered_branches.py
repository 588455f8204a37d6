"""Through a buffered front door with the task worker configured, each era keeps its own branch: a 2026-07-28 call
is answered in its own shape even when it carries a session header, and only a handshake-era call is relayed."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import redis
from botocore.stub import ANY, Stubber

from stratus import Settings
from stratus.handlers.invocation import invoke
from stratus.handlers.task_worker import LambdaLauncher
from stratus.transport.app import build_app
from stratus.transport.asgi import Router
from tests.fixtures.apps import shared
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.lambda_invoke import LambdaContext, event
from tests.fixtures.wire import STATELESS, initialize_message, sse_fields, stateless_meta, validate_response

WORKER = "stratus-task-worker"
SSE = {"accept": "application/json, text/event-stream"}


@pytest.fixture
def deployed(aws_credentials: None, container_loop: asyncio.AbstractEventLoop) -> Iterator[tuple[Router, Stubber, str]]:
    """The app behind the HTTP API on Redis, its task worker an asynchronous invoke (stubbed), with a session whose
    client declared elicitation."""
    prefix = f"branches-{secrets.token_hex(4)}"
    # A relayed call's buffered answer follows its stream until it asks or ends; nothing runs the worker here, so
    # the follow is bounded short.
    settings = Settings(
        store="redis://127.0.0.1:6379/0", store_prefix=prefix, secret_key=SECRET_KEY, max_stream_seconds=0.25
    )
    client = boto3.client("lambda")
    with Stubber(client) as stubber:
        app = build_app(shared, settings, task_launcher=LambdaLauncher(WORKER, client=client))
        opened = initialize_message()
        opened["params"]["capabilities"] = {"elicitation": {}}
        answer = invoke(app, event("http_api_v2", opened, {}), LambdaContext())
        yield app, stubber, answer["headers"]["mcp-session-id"]
        container_loop.run_until_complete(app.shutdown())
    store = redis.Redis()
    keys = list(store.scan_iter(match=f"{prefix}:*"))
    if keys:
        store.delete(*keys)
    store.close()


def _post(app: Router, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    answer: dict[str, Any] = invoke(app, event("http_api_v2", body, {**SSE, **headers}), LambdaContext())
    return answer


def test_a_2026_07_28_call_carrying_a_session_header_is_answered_in_its_own_era(
    deployed: tuple[Router, Stubber, str],
) -> None:
    app, stubber, session_id = deployed
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "count_to_three", "arguments": {}, "_meta": stateless_meta(progressToken="p")},
    }
    headers = {
        "mcp-session-id": session_id,
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": "count_to_three",
    }
    answer = _post(app, body, headers)

    assert answer["statusCode"] == 200
    assert answer["headers"]["content-type"] == "text/event-stream"
    messages = [json.loads(fields["data"]) for fields in sse_fields(answer["body"])]
    assert [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"] == [1, 2, 3]
    final = messages[-1]
    validate_response(STATELESS, "tools/call", final)
    assert final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == shared.name
    assert final["result"]["content"] == [{"type": "text", "text": "done"}]
    stubber.assert_no_pending_responses()  # and no invoke was made: the stub holds none, so one would have failed


def test_the_same_call_in_the_handshake_era_is_started_in_the_task_worker(
    deployed: tuple[Router, Stubber, str],
) -> None:
    app, stubber, session_id = deployed
    stubber.add_response(
        "invoke", {"StatusCode": 202}, {"FunctionName": WORKER, "InvocationType": "Event", "Payload": ANY}
    )
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "ask_user", "arguments": {}},
    }
    headers = {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    answer = _post(app, body, headers)

    stubber.assert_no_pending_responses()  # the worker was invoked for it
    assert answer["statusCode"] == 200
    assert answer["headers"]["content-type"] == "text/event-stream"
