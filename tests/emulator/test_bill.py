"""The bill: a REPORT line per invocation, GB-seconds per function, and throttling instead of an unbounded queue
(emulator/billing.py, emulator/containers.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

import anyio
import httpx
import pytest

from stratus.emulator.containers import FunctionPool, ThrottledError
from stratus.emulator.local_aws import LocalAws
from stratus.emulator.log_config import LogConfig
from stratus.emulator.stack import read_stack
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, VERSION, call_tool, initialize, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
BUFFERED = "stratus-local-BufferedFunction"
STREAMING = "stratus-local-StreamingFunction"
WAIT_SECONDS = 20
_REPORT = re.compile(
    r"^\[(?P<name>[^\]]+)\] REPORT RequestId: (?P<id>\S+)\tDuration: (?P<duration>[\d.]+) ms\t"
    r"Billed Duration: (?P<billed>\d+) ms\tMemory Size: (?P<memory>\d+) MB\tMax Memory Used: (?P<max>\d+) MB"
    r"(?:\tInit Duration: (?P<init>[\d.]+) ms)?$"
)
_INIT = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "bill-test", "version": "1"}}


@pytest.fixture(scope="module")
def output() -> Iterator[IO[bytes]]:
    with tempfile.TemporaryFile() as file:
        yield file


@pytest.fixture(scope="module")
def one_container(output: IO[bytes]) -> Iterator[LocalAws]:
    with serving(TEMPLATE, containers=1, throttle=True, output=output) as aws:
        yield aws


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT_SECONDS):
        while not condition():  # noqa: ASYNC110 - another thread's state, bounded by fail_after
            await anyio.sleep(0.01)


@asynccontextmanager
async def _container_held(aws: LocalAws, function: str, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The function's one container held by a tools/call (through the HTTP API or the Function URL) until the block
    ends; yields a client for what the block asks meanwhile."""
    door = "ServerlessHttpApi" if function == BUFFERED else "StreamingFunctionUrl"
    url = f"{aws.url(door)}/mcp"
    pool = aws.pools[function]
    release = tmp_path / "release"
    async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
        session = await initialize(http, url)
        served = len(pool.served)
        holding = asyncio.ensure_future(call_tool(http, url, session, "hold_until", {"path": str(release)}))
        await _until(lambda: len(pool.served) == served + 1)
        yield http
        release.write_text("go")
        await holding


def _reports(output: IO[bytes]) -> list[re.Match[str]]:
    output.seek(0)
    lines = output.read().decode(errors="replace").splitlines()
    return [match for line in lines if (match := _REPORT.match(line))]


async def test_each_invocation_writes_lambdas_report_line_with_the_functions_name(
    one_container: LocalAws, output: IO[bytes]
) -> None:
    memory = one_container.stack.functions[BUFFERED].memory_mb
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            await initialize(http, f"{one_container.url('ServerlessHttpApi')}/mcp")
    await _until(lambda: any(match["name"] == BUFFERED for match in _reports(output)))
    reports = [match for match in _reports(output) if match["name"] == BUFFERED]
    first = reports[0]
    assert first["init"] is not None  # the cold start
    assert int(first["memory"]) == memory
    assert int(first["max"]) > 0
    assert int(first["billed"]) >= float(first["duration"])


async def test_the_bill_counts_each_functions_invocations_and_gb_seconds(one_container: LocalAws) -> None:
    memory = one_container.stack.functions[BUFFERED].memory_mb
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            before = (await http.get(f"{one_container.url('Invoke')}/stratus/bill")).json().get(BUFFERED)
            await initialize(http, f"{one_container.url('ServerlessHttpApi')}/mcp")
            await _until(
                lambda: (
                    one_container.bill.summary()[BUFFERED]["invocations"]
                    > (before or {"invocations": 0})["invocations"]
                )
            )
            bill = await http.get(f"{one_container.url('Invoke')}/stratus/bill")
    assert bill.status_code == 200
    entry = bill.json()[BUFFERED]
    assert entry["invocations"] == (before or {"invocations": 0})["invocations"] + 1
    assert entry["memoryMb"] == memory
    assert entry["gbSeconds"] == pytest.approx(memory / 1024 * entry["billedMs"] / 1000, abs=1e-6)


@pytest.mark.parametrize(
    ("door", "function", "status", "error_type"),
    [
        ("ServerlessHttpApi", BUFFERED, 500, None),
        ("StreamingFunctionUrl", STREAMING, 429, "TooManyRequestsException"),
    ],
)
async def test_a_request_finding_no_free_container_is_refused_at_once_and_never_invoked(
    one_container: LocalAws, door: str, function: str, status: int, error_type: str | None, tmp_path: Path
) -> None:
    """With its one container busy, a function throttles the next request instead of queueing it: the front door
    answers as it answers Lambda's 429, and that request never runs, not even once the container is free."""
    url = f"{one_container.url(door)}/mcp"
    pool = one_container.pools[function]
    with anyio.fail_after(WAIT_SECONDS):
        async with _container_held(one_container, function, tmp_path) as http:
            served = len(pool.served)
            refused = await http.post(
                url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _INIT}, headers=HEADERS
            )
    assert refused.status_code == status, refused.text
    if error_type is not None:
        assert refused.headers["x-amzn-errortype"] == error_type
    assert len(pool.served) == served


async def test_the_invoke_api_answers_a_throttled_invocation_with_too_many_requests(
    one_container: LocalAws, tmp_path: Path
) -> None:
    invoke = f"{one_container.url('Invoke')}/2015-03-31/functions/{BUFFERED}/invocations"
    with anyio.fail_after(WAIT_SECONDS):
        async with _container_held(one_container, BUFFERED, tmp_path) as http:
            developer = {"authorization": "AWS4-HMAC-SHA256 Credential=AKIADEVELOPER/20261204/us-east-1/lambda/x"}
            refused = await http.post(invoke, content=b"{}", headers=developer)
    assert refused.status_code == 429
    assert refused.headers["x-amzn-errortype"] == "TooManyRequestsException"
    assert refused.json()["Reason"] == "ConcurrentInvocationLimitExceeded"


async def test_a_reserved_concurrency_of_zero_throttles_every_invocation() -> None:
    stack = read_stack(TEMPLATE, {})
    function = dataclasses.replace(stack.functions[BUFFERED], reserved_concurrency=0)
    pool = FunctionPool(
        function,
        lambda _: pytest.fail("no container may start"),
        max_containers=2,
        rng=random.Random(1),
        retire_rate=0.0,
    )
    with anyio.fail_after(WAIT_SECONDS), pytest.raises(ThrottledError) as raised:
        async with pool.invocation():
            pass
    assert raised.value.reason == "ReservedFunctionConcurrentInvocationLimitExceeded"


@pytest.fixture(scope="module")
def queueing(output: IO[bytes]) -> Iterator[LocalAws]:
    with serving(TEMPLATE, containers=1, output=output) as aws:
        yield aws


async def test_a_request_queued_for_a_busy_function_is_dropped_once_its_client_leaves(
    queueing: LocalAws, tmp_path: Path
) -> None:
    """Without throttling, a request that finds no free container waits for one; one whose client left meanwhile is
    dropped, so it never runs (nor bills) after the container frees."""
    pool = queueing.pools[STREAMING]
    url = f"{queueing.url('StreamingFunctionUrl')}/mcp"
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _INIT}
    with anyio.fail_after(WAIT_SECONDS):
        async with _container_held(queueing, STREAMING, tmp_path):
            served = len(pool.served)
            async with httpx.AsyncClient(timeout=0.5) as impatient:
                with pytest.raises(httpx.ReadTimeout):
                    await impatient.post(url, json=init, headers=HEADERS)  # queued; the client gives up and leaves
            await _until(lambda: pool.dropped == 1)
        await _until(lambda: pool.busy == 0)
    assert len(pool.served) == served


@pytest.mark.parametrize(
    ("config", "message", "sent"),
    [
        # JSON logs: a line is sent when its level is at least ApplicationLogLevel, read from the object's "level".
        (LogConfig("JSON", "WARN"), b'{"level":"INFO","message":"a call"}', False),
        (LogConfig("JSON", "WARN"), b'{"level":"WARNING","message":"slow store"}', True),
        (LogConfig("JSON", "WARN"), b'{"level":"ERROR","message":"failed"}', True),
        (LogConfig("JSON", "WARN"), b"INFO:     a line that is not JSON", False),  # no level: INFO
        (LogConfig("JSON", "INFO"), b"INFO:     a line that is not JSON", True),
        # Text logs: every line, whatever it says.
        (LogConfig("Text", "ERROR"), b'{"level":"DEBUG"}', True),
    ],
)
def test_a_line_a_function_writes_is_ingested_as_its_logging_config_says(
    config: LogConfig, message: bytes, sent: bool
) -> None:
    assert config.application_bytes(message + b"\n") == (len(message) + 26 if sent else 0)  # 26: each event's own
    assert config.application_bytes(b"\n") == 0


def test_lambda_s_own_events_are_ingested_as_text_or_at_info_and_not_at_warn() -> None:
    metrics = {"durationMs": 4.65, "billedDurationMs": 5, "memorySizeMB": 512, "maxMemoryUsedMB": 45}
    request_id = "c31c1b41-54ed-4da5-a696-9954175e2a6a"
    lines = [
        f"START RequestId: {request_id} Version: $LATEST",
        f"END RequestId: {request_id}",
        f"REPORT RequestId: {request_id}\tDuration: 4.65 ms\tBilled Duration: 5 ms\tMemory Size: 512 MB\t"
        "Max Memory Used: 45 MB",
    ]
    assert LogConfig("Text").platform_bytes(request_id, metrics) == sum(len(line) + 26 for line in lines)
    assert LogConfig("JSON", system_level="INFO").platform_bytes(request_id, metrics) > 0
    assert LogConfig("JSON", system_level="WARN").platform_bytes(request_id, metrics) == 0
