"""`stratus local`'s check in front of DynamoDB authorises the action moto will run, never another: a request that
names a second action (`?Action=`, an `Action=` pair in its body), signs for another service, or aims past the API's
root (moto's own `/moto-api`) is refused 400 before moto sees it, so a container allowed only the state table's item
operations can neither scan it nor drop it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import boto3
import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import TEMPLATE, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
WAIT_SECONDS = 20


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAws]:
    with serving(TEMPLATE, containers=1, store="dynamodb") as served:
        yield served


def _container(aws: LocalAws) -> tuple[str, str, str]:
    """The DynamoDB endpoint, access key and table of a new buffered-function container (its role: the state
    table's item operations, no Scan, ListTables or DeleteTable)."""
    function = next(each for each in aws.stack.functions.values() if each.logical_id == "BufferedFunction")
    environment = aws.environment(function)
    table = environment["STRATUS_STORE"].removeprefix("dynamodb://")
    return environment["AWS_ENDPOINT_URL_DYNAMODB"], environment["AWS_ACCESS_KEY_ID"], table


def _headers(key: str, operation: str, service: str = "dynamodb") -> dict[str, str]:
    return {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": f"DynamoDB_20120810.{operation}",
        "authorization": f"AWS4-HMAC-SHA256 Credential={key}/20261204/us-east-1/{service}/aws4_request, "
        "SignedHeaders=host, Signature=00",
    }


def _get_item(table: str) -> dict[str, Any]:
    return {"TableName": table, "Key": {"PK": {"S": "nothing"}, "SK": {"S": "here"}}}


def _table_exists(aws: LocalAws, table: str) -> bool:
    endpoint = aws.options.environment["AWS_ENDPOINT_URL_DYNAMODB"]
    client = boto3.client(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    return table in client.list_tables()["TableNames"]


async def test_an_allowed_item_operation_runs_and_a_scan_is_refused_by_the_role(aws: LocalAws) -> None:
    endpoint, key, table = _container(aws)
    async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
        with anyio.fail_after(WAIT_SECONDS):
            allowed = await http.post(endpoint, content=json.dumps(_get_item(table)), headers=_headers(key, "GetItem"))
            scan = await http.post(endpoint, content=json.dumps({"TableName": table}), headers=_headers(key, "Scan"))
    assert allowed.status_code == 200, allowed.text
    assert scan.status_code == 400 and scan.json()["__type"] == "AccessDeniedException"
    assert "dynamodb:Scan" in scan.json()["message"]


@pytest.mark.parametrize(
    ("path", "body_suffix", "service", "refusal"),
    [
        ("?Action=Scan", "", "dynamodb", "no query string"),
        ("?Action=DeleteTable", "", "dynamodb", "no query string"),
        ("", '&Action=DeleteTable&x=1"}', "dynamodb", "names two actions, GetItem (X-Amz-Target) and DeleteTable"),
        ("/moto-api/reset", "", "dynamodb", "API's root"),
        ("", "", "ssm", "not signed for dynamodb"),
    ],
)
async def test_a_request_whose_action_moto_would_read_elsewhere_is_refused_and_runs_nothing(
    aws: LocalAws, path: str, body_suffix: str, service: str, refusal: str
) -> None:
    endpoint, key, table = _container(aws)
    body = json.dumps(_get_item(table))
    if body_suffix:  # an `Action=` pair inside a string value: still JSON, and moto's form parser finds it
        body = json.dumps({**_get_item(table), "ReturnConsumedCapacity": "NONE" + body_suffix})
    async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
        with anyio.fail_after(WAIT_SECONDS):
            refused = await http.post(endpoint + path, content=body, headers=_headers(key, "GetItem", service))
    assert refused.status_code == 400, refused.text
    assert refused.json()["__type"] == "AccessDeniedException"
    assert refusal in refused.json()["message"]
    assert _table_exists(aws, table)
