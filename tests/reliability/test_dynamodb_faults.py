"""DynamoDB failing under Stratus (moto's server, with faults injected into botocore's send path): throttled
requests and writes whose conditions always fail. DynamoDB keeps its state, so sessions outlive the fault."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest
from botocore.awsrequest import AWSResponse

from stratus import McpServer, Settings, build_app
from stratus.resilience.breaker import BreakerPolicy
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.dynamodb.schema import create_table
from stratus.stores.factory import build_stores
from tests.fixtures.dynamodb_wire import JSON_1_0, Body
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.wire import McpHttp, initialize_message

pytestmark = pytest.mark.anyio


def failing(
    code: str, operations: tuple[str, ...], *, times: int | None = None, reasons: list[str] | None = None
) -> Callable[..., AWSResponse | None]:
    """A `before-send` hook answering the named operations with a DynamoDB error instead of sending them (the
    first `times` of them, or all); `reasons` are a cancelled transaction's, one per operation."""
    error: dict[str, Any] = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}", "message": "injected"}
    if reasons is not None:
        error["CancellationReasons"] = [{"Code": reason} for reason in reasons]
    body = json.dumps(error).encode()
    left = [times]

    def hook(request: Any, **kwargs: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).rpartition(".")[2]
        if operation in operations and (left[0] is None or left[0] > 0):
            left[0] = None if left[0] is None else left[0] - 1
            return AWSResponse(request.url, 400, JSON_1_0, Body(body))
        return None

    return hook


@dataclass
class Deployment:
    mcp: McpHttp
    stores: Stores

    def inject(self, hook: Callable[..., AWSResponse | None]) -> None:
        self.stores.sessions.table.client.meta.events.register("before-send.dynamodb", hook)  # type: ignore[attr-defined]

    def heal(self, hook: Callable[..., AWSResponse | None]) -> None:
        self.stores.sessions.table.client.meta.events.unregister("before-send.dynamodb", hook)  # type: ignore[attr-defined]


@pytest.fixture
async def deployment(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Deployment]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "t",
        "AWS_SECRET_ACCESS_KEY": "t",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_server)
    table = f"faults-{secrets.token_hex(4)}"
    create_table(boto3.client("dynamodb"), table)
    server = McpServer("faults", "1.0.0", breaker=BreakerPolicy())

    @server.tool()
    def add(a: int, b: int) -> int:
        """A tool behind the server's breaker (state in DynamoDB)."""
        return a + b

    # A session limit makes every create a transaction on a count item (with none, creates are plain puts).
    stores = build_stores(
        f"dynamodb://{table}", StoreOptions(session_ttl_seconds=600, prefix="f", timeout=1.0, max_sessions=1000)
    )
    settings = Settings(store=f"dynamodb://{table}", secret_key=SECRET_KEY, max_sessions=1000)
    app = build_app(server, settings, stores=stores)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        yield Deployment(McpHttp(http), stores)


CALL = {"name": "add", "arguments": {"a": 1, "b": 2}}


async def test_throttled_dynamodb_is_503_and_the_session_outlives_it(deployment: Deployment) -> None:
    session = await deployment.mcp.initialize()
    assert (await session.request("tools/call", CALL)).status_code == 200
    throttle = failing(
        "ThrottlingException", ("GetItem", "BatchGetItem", "UpdateItem", "PutItem", "TransactWriteItems")
    )
    deployment.inject(throttle)
    refused = await session.request("tools/call", CALL)
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == -31502
    deployment.heal(throttle)
    healed = await session.request("tools/call", CALL)
    assert healed.status_code == 200 and healed.json()["result"]["structuredContent"] == {"result": 3}


async def test_writes_whose_conditions_always_fail_end_in_a_clear_503_while_reads_go_on(deployment: Deployment) -> None:
    session = await deployment.mcp.initialize()
    contended = failing("ConditionalCheckFailedException", ("UpdateItem", "PutItem", "TransactWriteItems"))
    deployment.inject(contended)
    assert (await session.request("tools/call", CALL)).status_code == 200  # needs no write: served
    refused = await deployment.mcp.post(initialize_message())  # a new session needs one: refused, not 500
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == -31502
    deployment.heal(contended)
    assert (await deployment.mcp.post(initialize_message())).status_code == 200


async def test_transactions_cancelled_by_a_conflict_are_tried_again(deployment: Deployment) -> None:
    """Two containers creating sessions at once touch the same roster count item; DynamoDB cancels one
    transaction with TransactionConflict (nothing applied), and Stratus tries it again."""
    conflict = ["None", "None", "TransactionConflict"]
    twice = failing("TransactionCanceledException", ("TransactWriteItems",), times=2, reasons=conflict)
    deployment.inject(twice)
    created = await deployment.mcp.post(initialize_message())
    assert created.status_code == 200
    deployment.heal(twice)
    forever = failing("TransactionCanceledException", ("TransactWriteItems",), reasons=conflict)
    deployment.inject(forever)
    refused = await deployment.mcp.post(initialize_message())
    assert refused.status_code == 503
    assert refused.json()["error"]["message"] == "The write is too contended to complete; retry shortly"
