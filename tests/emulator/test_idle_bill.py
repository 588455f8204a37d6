"""What a connected, idle client costs: the official Python SDK client (2025-11-25) through `stratus local`'s
streaming front doors, with the template's defaults, its GET stream answered as polls (`stratus.transport.polling`).

Lambda bills a streamed response for its whole duration, and a container held by one idle client for 10 minutes
bills 600 s. Here the client polls every `STRATUS_POLL_RETRY_SECONDS` (5 s), each poll a short invocation, so the
billed time during its idle spell is a small fraction of the wall time; the fraction, not the spell's length, is
what is checked (bench/idle_client.py measures the whole 10 minutes). A list change published meanwhile, by a call
through the other function, reaches it within one retry delay and a poll.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp_types import ToolListChangedNotification

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import TEMPLATE, call_tool, initialize, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
STREAMING = "stratus-local-StreamingFunction"
RETRY_SECONDS = 5.0
"""The template's PollRetrySeconds default."""
POLLS = 2
"""Polls on each side of the list change: the idle spell is about 4 retry delays."""
MAX_SHARE = 0.02
"""The idle client's billed time at most this share of the wall time (issue 28's bound)."""


@pytest.fixture(scope="module")
def stack() -> Any:
    with serving(TEMPLATE, containers=2) as aws:
        yield aws


def _billed_ms(aws: LocalAws) -> int:
    entry = aws.bill.summary().get(STREAMING)
    return int(entry["billedMs"]) if entry else 0


async def _after_polls(aws: LocalAws, count: int) -> None:
    """Return once the streaming function has served `count` more invocations (the client's polls)."""
    pool = aws.pools[STREAMING]
    target = len(pool.served) + count
    with anyio.fail_after(count * RETRY_SECONDS + 10):
        while len(pool.served) < target:  # noqa: ASYNC110 - the emulator's count, moved by the client's own timer
            await anyio.sleep(0.05)


@pytest.mark.parametrize("door", ["StreamingFunctionUrl", "StreamingRestApi"])
async def test_an_idle_sdk_client_bills_under_2_percent_of_a_held_container_and_still_hears_a_list_change(
    stack: LocalAws, door: str
) -> None:
    loop = asyncio.get_running_loop()
    heard: list[float] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            heard.append(loop.time())

    async with Client(f"{stack.url(door)}/mcp", mode="legacy", message_handler=on_message) as client:
        assert client.protocol_version == "2025-11-25"
        await client.list_tools()
        await _after_polls(stack, 1)  # the GET stream has started polling
        started, billed = loop.time(), _billed_ms(stack)
        await _after_polls(stack, POLLS)

        # A list change, made through the HTTP API (the buffered function, billed apart), on the shared store.
        async with httpx.AsyncClient(timeout=10) as http:
            elsewhere = f"{stack.url('ServerlessHttpApi')}/mcp"
            await call_tool(http, elsewhere, await initialize(http, elsewhere), "announce", {})
        changed = loop.time()
        with anyio.fail_after(RETRY_SECONDS + 5):
            while not heard:  # noqa: ASYNC110 - set by the SDK client's own poll
                await anyio.sleep(0.05)
        assert heard[0] - changed <= RETRY_SECONDS + 1  # one retry delay and a poll

        await _after_polls(stack, POLLS)
        idle_ms = (loop.time() - started) * 1000
        share = (_billed_ms(stack) - billed) / idle_ms
    assert share <= MAX_SHARE, f"the idle client billed {share:.2%} of its {idle_ms / 1000:.0f} s"
    # Once it left, nothing of it runs on: a poll holds for nothing (PollHoldSeconds 0).
    with anyio.fail_after(2):
        while stack.pools[STREAMING].busy:  # noqa: ASYNC110 - the emulator's count of running invocations
            await anyio.sleep(0.01)


def _logged(aws: LocalAws) -> tuple[int, int]:
    """The streaming function's log bytes and billed invocations so far (the bill records both as one ends)."""
    entry = aws.bill.summary().get(STREAMING)
    return (int(entry["logBytes"]), int(entry["invocations"])) if entry else (0, 0)


async def _idle_log_bytes_per_poll(aws: LocalAws) -> float:
    """What each of an idle SDK client's polls through the Function URL put into the streaming function's logs."""
    async with Client(f"{aws.url('StreamingFunctionUrl')}/mcp", mode="legacy") as client:
        await client.list_tools()
        await _after_polls(aws, 1)
        before, billed = _logged(aws)
        await _after_polls(aws, POLLS)
        after, polls = _logged(aws)
    return (after - before) / (polls - billed)


@pytest.fixture(scope="module")
def platform_info_stack() -> Any:
    with serving(TEMPLATE, containers=2, parameters={"PlatformLogLevel": "INFO"}) as aws:
        yield aws


async def test_an_idle_client_s_polls_put_nothing_into_the_logs_unless_lambda_s_own_events_are_asked_for(
    stack: LocalAws, platform_info_stack: LocalAws
) -> None:
    """At the defaults (JSON logs, PlatformLogLevel WARN, no access log) a poll writes nothing CloudWatch Logs would
    ingest; with PlatformLogLevel INFO each poll adds Lambda's platform.start and platform.report events."""
    assert await _idle_log_bytes_per_poll(stack) == 0
    per_poll = await _idle_log_bytes_per_poll(platform_info_stack)
    assert 350 <= per_poll <= 700, per_poll


@pytest.fixture(scope="module")
def dynamodb_stack() -> Any:
    with serving(TEMPLATE, containers=2, store="dynamodb") as aws:
        yield aws


async def _read_units(aws: LocalAws) -> tuple[float, int]:
    """The streaming function's DynamoDB read units and invocations, between two polls (the units are metered per
    call, an invocation is billed when it ends)."""
    with anyio.fail_after(5):
        while aws.pools[STREAMING].busy:  # noqa: ASYNC110 - the emulator's count of running invocations
            await anyio.sleep(0.01)
    entry = aws.bill.summary()[STREAMING]
    return float(entry["readUnits"]), int(entry["invocations"])


async def test_on_dynamodb_each_idle_poll_takes_one_read_unit(dynamodb_stack: LocalAws) -> None:
    """Half a unit for the session's item (eventually consistent; it numbers the session's own log, so nothing of
    that log is read while nothing was addressed to it), half for the server-wide log's mirror. Before, a poll made
    three strongly consistent reads: three units, $0.20 of a client's month at a 5 s retry."""
    async with Client(f"{dynamodb_stack.url('StreamingFunctionUrl')}/mcp", mode="legacy") as client:
        await client.list_tools()
        await _after_polls(dynamodb_stack, 1)
        before, polled = await _read_units(dynamodb_stack)
        await _after_polls(dynamodb_stack, POLLS)
        after, polls = await _read_units(dynamodb_stack)
    assert polls - polled >= POLLS
    assert after - before == polls - polled
