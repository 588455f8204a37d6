"""`stratus local`'s embedded DynamoDB answers only who holds its endpoint: a request without the per-server secret in
its path, or with a Host that is not the loopback address it listens on (a DNS-rebinding page), is refused 403 before
moto reads it, and writes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import boto3
import httpx
import pytest

from stratus.emulator.local_dynamodb import TABLE, embedded_dynamodb
from tests.fixtures.moto_server import SerialMotoServer, client_keys

_HEADERS = {
    "content-type": "application/x-amz-json-1.0",
    "authorization": "AWS4-HMAC-SHA256 Credential=AKIA/20261204/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=host, Signature=00",
}
"""What a page could forge: moto checks no signature."""


@pytest.fixture(scope="module")
def embedded() -> Iterator[str]:
    """One per module: moto keeps its tables per process, so a second embedded DynamoDB would find the first's."""
    server, settings = embedded_dynamodb()
    try:
        yield settings["AWS_ENDPOINT_URL_DYNAMODB"]
    finally:
        server.stop()


def _planted(endpoint: str, key: str) -> bool:
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", **client_keys())
    return "Item" in client.get_item(TableName=TABLE, Key={"PK": {"S": key}, "SK": {"S": "code"}})


def _forged_put(url: str, key: str, host: str | None = None) -> httpx.Response:
    body = {"TableName": TABLE, "Item": {"PK": {"S": key}, "SK": {"S": "code"}}}
    headers = {**_HEADERS, "x-amz-target": "DynamoDB_20120810.PutItem", **({"host": host} if host else {})}
    return httpx.post(url, content=json.dumps(body), headers=headers, timeout=5)


def test_the_endpoint_it_hands_out_serves_the_stack(embedded: str) -> None:
    assert urlsplit(embedded).path.count("/") == 1 and len(urlsplit(embedded).path) > 16
    assert not _planted(embedded, "anything")


def test_a_request_without_the_secret_is_refused_and_writes_nothing(embedded: str) -> None:
    parts = urlsplit(embedded)
    bare = f"{parts.scheme}://{parts.netloc}/"
    refused = _forged_put(bare, "no-secret")
    assert refused.status_code == 403
    assert refused.json()["__type"].endswith("#UnrecognizedClientException")
    scan = httpx.post(bare, content=json.dumps({"TableName": TABLE}), headers=_HEADERS, timeout=5)
    assert scan.status_code == 403
    assert _forged_put(f"{bare}{parts.path.strip('/')}x/", "longer").status_code == 403  # another secret
    assert not _planted(embedded, "no-secret") and not _planted(embedded, "longer")


def test_a_rebound_host_is_refused_even_with_the_secret(embedded: str) -> None:
    refused = _forged_put(embedded + "/", "rebound", host="evil.example")
    assert refused.status_code == 403
    assert not _planted(embedded, "rebound")
    port = urlsplit(embedded).port
    assert _forged_put(embedded + "/", "loopback", host=f"localhost:{port}").status_code == 200
    assert _planted(embedded, "loopback")


def test_each_server_has_a_secret_of_its_own() -> None:
    first, second = SerialMotoServer(), SerialMotoServer()
    try:
        assert urlsplit(first.start()).path != urlsplit(second.start()).path
    finally:
        first.stop()
        second.stop()
