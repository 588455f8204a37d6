"""IAM enforced in the emulated stack: every function runs with the execution role template.yaml gives it, and every
AWS call it makes (DynamoDB, SSM, Lambda's Invoke) is checked against that role before it is sent, as AWS checks it.

The whole stack is driven as it is used (a session through the HTTP API, a streamed call and a GET poll through the
Function URL, a task in the task worker, a scheduled sweep), with the secret key read from SSM as deployed
(`STRATUS_SECRET_KEY=ssm:/stratus/secret-key`, the parameter in moto's SSM), on Redis and on DynamoDB: no call is
refused, and each function calls exactly the services docs/deploy.md's table of network needs lists for it.

The sweeper's policy before its fix (no GetItem or PutItem for its cursor item) fails the same sweep with
AccessDenied, which on AWS failed every run silently."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import boto3
import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import (
    HEADERS,
    JWT_PARAMETERS,
    TEMPLATE,
    VERSION,
    initialize,
    read_answer,
    serving,
)
from tests.fixtures.jwt_issuer import authorization_server
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.moto_server import SerialMotoServer, client_keys

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

WAIT_SECONDS = 60.0
TASK_POLLS = 200
SECRET_PARAMETER = "/stratus/secret-key"


@pytest.fixture(scope="module")
def ssm_endpoint() -> Iterator[str]:
    """moto's SSM with the stack's secret key parameter, as `sam deploy`'s checklist has it created."""
    server = SerialMotoServer()
    endpoint = server.start()
    try:
        ssm = boto3.client("ssm", endpoint_url=endpoint, region_name="us-east-1", **client_keys())
        ssm.put_parameter(Name=SECRET_PARAMETER, Value=SECRET_KEY, Type="SecureString", Overwrite=True)
        yield endpoint
    finally:
        server.stop()


def _function(aws: LocalAws, logical_id: str) -> str:
    return next(function.name for function in aws.stack.functions.values() if function.logical_id == logical_id)


async def _sweep(aws: LocalAws, http: httpx.AsyncClient) -> httpx.Response:
    """The sweeper's scheduled invocation, as EventBridge makes it (through Lambda's Invoke API)."""
    sweeper = _function(aws, "SweeperFunction")
    url = f"{aws.url('Invoke')}/2015-03-31/functions/{sweeper}/invocations"
    # Signed by a key the stack did not issue, as EventBridge's service principal is none of the containers.
    signed = {"authorization": "AWS4-HMAC-SHA256 Credential=AKIAEVENTBRIDGE/20261204/us-east-1/lambda/aws4_request"}
    return await http.post(url, json={"source": "aws.events", "detail-type": "Scheduled Event"}, headers=signed)


async def _drive_every_function(aws: LocalAws, http: httpx.AsyncClient) -> httpx.Response:
    """A session, a call and a task through the HTTP API, a streamed call and a GET poll through the Function URL,
    then a sweep; the sweep's answer."""
    buffered, streaming = f"{aws.url('ServerlessHttpApi')}/mcp", f"{aws.url('StreamingFunctionUrl')}/mcp"
    session = await initialize(http, buffered)
    headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": VERSION}

    async def post(url: str, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        response = await http.post(url, json=message, headers=headers)
        assert response.status_code == 200, response.text
        return read_answer(response, request_id)

    called = await post(streaming, 1, "tools/call", {"name": "where", "arguments": {}})
    assert "result" in called, called
    for door in (buffered, streaming):
        created = await post(door, 2, "tools/call", {"name": "where", "arguments": {}, "task": {}})
        task_id = created["result"]["task"]["taskId"]
        status = ""
        for poll in range(TASK_POLLS):
            status = (await post(buffered, 3 + poll, "tasks/get", {"taskId": task_id}))["result"]["status"]
            if status not in ("working", "input_required"):
                break
        assert status == "completed"
    async with http.stream("GET", streaming, headers={**headers, "accept": "text/event-stream"}) as stream:
        assert stream.status_code == 200
        await stream.aread()  # a poll: what happened since, then the id to come back with
    return await _sweep(aws, http)


@pytest.mark.parametrize(("store", "auth"), [("redis", "off"), ("dynamodb", "off"), ("dynamodb", "jwt")])
async def test_every_function_runs_with_its_role_and_no_call_is_refused(
    store: str, auth: str, ssm_endpoint: str
) -> None:
    """With `AuthMode=jwt` every request carries a token from an authorization server on 127.0.0.1: the serving
    functions fetch its JWKS (the VPC table's `AuthMode=jwt` line) and call no other AWS service for it."""
    environment = {"STRATUS_SECRET_KEY": f"ssm:{SECRET_PARAMETER}", "AWS_ENDPOINT_URL_SSM": ssm_endpoint}
    with ExitStack() as held:
        parameters, headers = {}, {}
        if auth == "jwt":
            issuer = held.enter_context(authorization_server())
            parameters = {**JWT_PARAMETERS, "AuthIssuer": issuer.url, "AuthJwksUrl": f"{issuer.url}/jwks.json"}
            token = issuer.token(iss=issuer.url, aud=JWT_PARAMETERS["AuthAudience"], scope="tools:read")
            headers = {"authorization": f"Bearer {token}"}
        aws = held.enter_context(serving(TEMPLATE, store=store, parameters=parameters, environment=environment))
        with anyio.fail_after(WAIT_SECONDS):
            async with httpx.AsyncClient(timeout=WAIT_SECONDS, headers=headers) as http:
                swept = await _drive_every_function(aws, http)
        if auth == "jwt":
            assert issuer.jwks_fetches >= 1
        assert swept.status_code == 200 and "x-amz-function-error" not in swept.headers, swept.text
        assert set(swept.json()) == {"swept", "activeSessions"}
        assert aws.calls.denied() == []
        called = {function.logical_id: aws.calls.services(name) for name, function in aws.stack.functions.items()}
    assert called == _network_table(store)


_SERVICES = {"SSM": "ssm", "DynamoDB": "dynamodb", "Lambda": "lambda"}


def _network_table(store: str) -> dict[str, set[str]]:
    """docs/deploy.md's "what each function must reach": function to the services it names, for `store`."""
    text = (TEMPLATE.parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = text[text.index("### In a VPC: what each function must reach") :]
    rows = re.findall(r"^\| `(\w+Function)` \| ([^|]+) \| ([^|]+) \|$", section, re.MULTILINE)
    assert len(rows) == 4, rows
    column = 1 if store == "dynamodb" else 2
    return {row[0]: {_SERVICES[name.strip()] for name in row[column].split(",")} for row in rows}


def _sweeper_policy_before_its_fix(directory: Path) -> Path:
    """template.yaml with the sweeper's DynamoDB grants as they were (no GetItem or PutItem), its code where
    template.yaml's is."""
    text = TEMPLATE.read_text(encoding="utf-8").replace("CodeUri: .", f"CodeUri: {TEMPLATE.parent}")
    start = text.index("  SweeperRole:")
    sweeper = re.sub(r"\n +- dynamodb:(GetItem|PutItem)(?=\n)", "", text[start:], count=2)
    path = directory / "sweeper_before_fix.yaml"
    path.write_text(text[:start] + sweeper, encoding="utf-8")
    return path


async def test_defect_pinned_the_sweepers_old_policy_fails_every_sweep_with_access_denied(
    tmp_path: Path, ssm_endpoint: str
) -> None:
    environment = {"STRATUS_SECRET_KEY": f"ssm:{SECRET_PARAMETER}", "AWS_ENDPOINT_URL_SSM": ssm_endpoint}
    with serving(_sweeper_policy_before_its_fix(tmp_path), store="dynamodb", environment=environment) as aws:
        with anyio.fail_after(WAIT_SECONDS):
            async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
                swept = await _drive_every_function(aws, http)
        denied = [(call.function, call.action) for call in aws.calls.denied()]
    assert swept.headers.get("x-amz-function-error") == "Unhandled"
    assert swept.json()["errorType"] == "StoreUnavailableError"  # the sweep failed (SweeperFunctionErrorsAlarm)
    assert denied == [(_function(aws, "SweeperFunction"), "dynamodb:GetItem")]


def test_a_role_the_emulator_cannot_evaluate_is_left_unchecked_and_says_why(tmp_path: Path) -> None:
    """An AWS managed policy it does not know, or a condition: refusing would fail calls AWS may allow."""
    from stratus.emulator.iam import check
    from stratus.emulator.stack import read_stack

    text = TEMPLATE.read_text(encoding="utf-8").replace("CodeUri: .", f"CodeUri: {TEMPLATE.parent}")
    start = text.index("  SweeperRole:")
    unknown = "      ManagedPolicyArns:\n        - arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess\n"
    sweeper = text[start:].replace("      ManagedPolicyArns:\n", unknown, 1)
    path = tmp_path / "unknown_policy.yaml"
    path.write_text(text[:start] + sweeper, encoding="utf-8")
    roles = {function.logical_id: function.role for function in read_stack(path).functions.values()}
    sweeper_role, serving = roles["SweeperFunction"], roles["BufferedFunction"]
    assert sweeper_role is not None and serving is not None
    assert "AmazonS3ReadOnlyAccess is not one the emulator knows" in sweeper_role.unchecked
    assert check(sweeper_role, "sweeper", "s3:GetObject", ["arn:aws:s3:::any/key"]) is None
    assert serving.unchecked == ""
    assert check(serving, "buffered", "s3:GetObject", ["arn:aws:s3:::any/key"]) is not None
