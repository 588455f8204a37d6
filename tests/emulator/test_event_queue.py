"""Asynchronous invocation in the emulator, as Lambda's event queue delivers it: a function error is retried (per
the function's EventInvokeConfig, else twice) after delays scaled by `time_scale`, and an event that fails every
attempt goes to the function's on-failure destination as Lambda's invocation record."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import boto3
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
TEMPLATE = Path(__file__).parent / "templates" / "async_events.yaml"
FLAKY = "stratus-local-FlakyFunction"
UNREPORTED = "stratus-local-UnreportedFunction"
SLOW = "stratus-local-SlowFunction"
RECORDER = "stratus-local-RecorderFunction"
TIME_SCALE = 0.01
"""The retry delays (1 and 2 minutes) become 0.6 s and 1.2 s."""
WAIT_SECONDS = 20


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAws]:
    with serving(TEMPLATE, containers=1, time_scale=TIME_SCALE) as served:
        yield served


def _send(aws: LocalAws, function: str, event: dict[str, Any]) -> None:
    """An asynchronous invocation, as a container's boto3 client sends it."""
    client = boto3.client(
        "lambda",
        endpoint_url=aws.url("Invoke"),
        region_name=aws.stack.region,
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )
    answer = client.invoke(FunctionName=function, InvocationType="Event", Payload=json.dumps(event).encode())
    assert answer["StatusCode"] == 202


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def _until_lines(path: Path, count: int) -> list[str]:
    with anyio.fail_after(WAIT_SECONDS):
        while len(lines := _lines(path)) < count:  # noqa: ASYNC110 - written by a container's process
            await anyio.sleep(0.02)
    return lines


async def _until_served(aws: LocalAws, function: str, count: int) -> None:
    """Until `function` has ended `count` invocations (its pool counts an invocation when it starts)."""
    with anyio.fail_after(WAIT_SECONDS):
        while len(aws.pools[function].served) < count or aws.pools[function].busy:  # noqa: ASYNC110 - its thread
            await anyio.sleep(0.02)


async def test_an_event_whose_first_attempt_fails_is_retried_and_reports_nothing(aws: LocalAws, tmp_path: Path) -> None:
    event = {"attempts": str(tmp_path / "attempts"), "failures": 1, "records": str(tmp_path / "records")}
    served = len(aws.pools[FLAKY].served)
    await asyncio.to_thread(_send, aws, FLAKY, event)
    assert len(await _until_lines(tmp_path / "attempts", 2)) == 2
    await _until_served(aws, FLAKY, served + 2)
    assert len(aws.pools[FLAKY].served) == served + 2  # the retry succeeded: no third attempt
    assert not (tmp_path / "records").exists()  # a success goes to no on-failure destination


async def test_an_event_failing_every_attempt_goes_to_the_on_failure_destination_as_lambdas_record(
    aws: LocalAws, tmp_path: Path
) -> None:
    event = {"attempts": str(tmp_path / "attempts"), "failures": 9, "records": str(tmp_path / "records")}
    await asyncio.to_thread(_send, aws, FLAKY, event)
    (line,) = await _until_lines(tmp_path / "records", 1)
    record = json.loads(line)
    assert len(_lines(tmp_path / "attempts")) == 2  # MaximumRetryAttempts: 1
    assert record["version"] == "1.0" and record["requestPayload"] == event
    context = record["requestContext"]
    assert (context["condition"], context["approximateInvokeCount"]) == ("RetriesExhausted", 2)
    assert context["functionArn"] == f"{aws.stack.functions[FLAKY].arn}:$LATEST" and context["requestId"]
    assert record["responseContext"] == {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"}
    assert record["responsePayload"]["errorType"] == "RuntimeError"


async def test_a_function_without_an_event_invoke_config_is_retried_twice_and_then_dropped(
    aws: LocalAws, tmp_path: Path
) -> None:
    event = {"attempts": str(tmp_path / "attempts"), "failures": 9, "records": str(tmp_path / "records")}
    served = len(aws.pools[UNREPORTED].served)
    await asyncio.to_thread(_send, aws, UNREPORTED, event)
    assert len(await _until_lines(tmp_path / "attempts", 3)) == 3
    await _until_served(aws, UNREPORTED, served + 3)
    assert len(aws.pools[UNREPORTED].served) == served + 3
    assert not (tmp_path / "records").exists()


async def test_an_invocation_that_outlives_its_timeout_is_a_function_error_sent_to_the_destination(
    aws: LocalAws, tmp_path: Path
) -> None:
    """Its Timeout (100 s) is 1 s at this time scale; MaximumRetryAttempts 0 sends it on at once."""
    event = {"seconds": 5, "records": str(tmp_path / "records")}
    await asyncio.to_thread(_send, aws, SLOW, event)
    (line,) = await _until_lines(tmp_path / "records", 1)
    record = json.loads(line)
    assert (record["requestContext"]["condition"], record["requestContext"]["approximateInvokeCount"]) == (
        "RetriesExhausted",
        1,
    )
    assert record["responsePayload"]["errorType"] == "Sandbox.Timedout"
