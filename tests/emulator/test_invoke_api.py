"""`stratus local`'s Lambda Invoke API serves the stack's own containers alone: a request needs the per-stack
secret the emulator puts in their `AWS_ENDPOINT_URL_LAMBDA` (boto3 keeps the endpoint's path), a Host naming the
loopback address it listens on, and a content type boto3 sends (none, JSON or octet-stream). Anything else, such as
a DNS-rebinding page posting a forged event, is refused as AWS refuses (403 `UnrecognizedClientException`, 415
`UnsupportedMediaTypeException`) before any function runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import anyio
import boto3
import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import TEMPLATE, serving
from tests.fixtures.lambda_events import http_event

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
BUFFERED = "stratus-local-BufferedFunction"
TASK_WORKER = "stratus-local-TaskWorkerFunction"
INVOKE = "/2015-03-31/functions/{}/invocations"
WAIT_SECONDS = 20
DEVELOPER = {"authorization": "AWS4-HMAC-SHA256 Credential=AKIADEVELOPER/20261204/us-east-1/lambda/aws4_request"}
"""A key the stack did not issue: the developer's own credentials, which no role binds."""


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAws]:
    with serving(TEMPLATE, containers=1) as served:
        yield served


def _containers_endpoint(aws: LocalAws) -> str:
    """The Invoke API's URL as the stack's containers are given it (and `stratus local` prints it)."""
    endpoint = aws.environment(aws.stack.functions[TASK_WORKER])["AWS_ENDPOINT_URL_LAMBDA"]
    assert endpoint == aws.url("Invoke")
    return endpoint


def _forged_event() -> bytes:
    """A payload 2.0 event as a page would forge it: claims an authorizer never issued."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    event = http_event(body, {"content-type": "application/json", "accept": "application/json"})
    event["requestContext"]["authorizer"] = {"jwt": {"claims": {"sub": "mallory", "cognito:groups": "admin"}}}
    return json.dumps(event).encode()


async def test_a_request_without_the_stacks_secret_is_refused_and_runs_nothing(aws: LocalAws) -> None:
    served = list(aws.pools[BUFFERED].served)
    base = urlsplit(aws.url("Invoke"))._replace(path="").geturl()
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(base_url=base, timeout=WAIT_SECONDS) as http:
            for path in (INVOKE.format(BUFFERED), f"/not-the-secret{INVOKE.format(BUFFERED)}"):
                refused = await http.post(path, content=_forged_event())
                assert refused.status_code == 403, refused.text
                assert refused.headers["x-amzn-errortype"] == "UnrecognizedClientException"
                assert "message" in refused.json()
    assert aws.pools[BUFFERED].served == served


async def test_a_host_other_than_its_loopback_address_is_refused_even_with_the_secret(aws: LocalAws) -> None:
    endpoint = urlsplit(_containers_endpoint(aws))
    served = list(aws.pools[BUFFERED].served)
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            url = f"{endpoint.geturl()}{INVOKE.format(BUFFERED)}"
            for host in (f"rebound.example:{endpoint.port}", "127.0.0.1", f"localhost:{(endpoint.port or 0) + 1}"):
                refused = await http.post(url, content=_forged_event(), headers={"host": host})
                assert refused.status_code == 403, (host, refused.text)
                assert refused.headers["x-amzn-errortype"] == "UnrecognizedClientException"
    assert aws.pools[BUFFERED].served == served


@pytest.mark.parametrize("content_type", ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded"])
async def test_a_content_type_a_browser_sends_freely_is_refused(aws: LocalAws, content_type: str) -> None:
    url = f"{_containers_endpoint(aws)}{INVOKE.format(TASK_WORKER)}"
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            refused = await http.post(url, content=b"{}", headers={"content-type": content_type})
    assert refused.status_code == 415
    assert refused.headers["x-amzn-errortype"] == "UnsupportedMediaTypeException"


async def test_the_containers_boto3_client_invokes_through_it(aws: LocalAws) -> None:
    """As the task worker's launcher does: boto3 with the containers' endpoint and credentials."""
    client = boto3.client(
        "lambda",
        endpoint_url=_containers_endpoint(aws),
        region_name=aws.stack.region,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    with anyio.fail_after(WAIT_SECONDS):
        answer = await asyncio.to_thread(client.invoke, FunctionName=TASK_WORKER, Payload=b'{"nothing": 1}')
    assert answer["StatusCode"] == 200 and "FunctionError" not in answer
    assert json.loads(answer["Payload"].read()) == {"ran": False}


async def test_an_event_payload_over_one_megabyte_is_refused_413_where_a_synchronous_one_runs(aws: LocalAws) -> None:
    """Lambda's quotas: 1 MB for an asynchronous invocation's payload, 6 MB for a synchronous one."""
    url = f"{_containers_endpoint(aws)}{INVOKE.format(TASK_WORKER)}"
    payload = json.dumps({"nothing": "x" * (1024 * 1024)}).encode()
    served = list(aws.pools[TASK_WORKER].served)
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            refused = await http.post(url, content=payload, headers={"x-amz-invocation-type": "Event", **DEVELOPER})
            assert refused.status_code == 413, refused.text
            assert refused.headers["x-amzn-errortype"] == "RequestTooLargeException"
            assert aws.pools[TASK_WORKER].served == served  # nothing queued
            ran = await http.post(url, content=payload, headers=DEVELOPER)
    assert ran.status_code == 200 and ran.json() == {"ran": False}


async def test_an_unsigned_invoke_is_refused_as_aws_refuses_it_and_runs_nothing(aws: LocalAws) -> None:
    """With IAM enforced, a call that skips signing never skips the role: 403 `MissingAuthenticationTokenException`
    where it used to run the function (202 for an event), whatever role the container holds."""
    url = f"{_containers_endpoint(aws)}{INVOKE.format(TASK_WORKER)}"
    served = list(aws.pools[TASK_WORKER].served)
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            for kind in ("Event", "RequestResponse"):
                refused = await http.post(url, content=b'{"nothing": 1}', headers={"x-amz-invocation-type": kind})
                assert refused.status_code == 403, refused.text
                assert refused.headers["x-amzn-errortype"] == "MissingAuthenticationTokenException"
            signed = await http.post(url, content=b'{"nothing": 1}', headers=DEVELOPER)
    assert signed.status_code == 200 and signed.json() == {"ran": False}
    assert len(aws.pools[TASK_WORKER].served) == len(served) + 1
