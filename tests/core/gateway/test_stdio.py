"""The gateway's upstream client over stdio, against a server built with the official Python SDK in its own
process (tests/fixtures/sdk_upstream.py): the handshake, calls, what the upstream sends meanwhile, and the
process's life and death."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stratus.errors import UnencodableTextError
from stratus.gateway.config import Upstream
from stratus.gateway.connectors import stdio
from stratus.gateway.connectors.stdio import StdioTransport
from stratus.gateway.upstream_client import UpstreamClient, UpstreamUnavailableError
from stratus.pipeline.circuit import is_failure
from tests.fixtures.peers import text_of
from tests.fixtures.upstream_connections import connected_client

pytestmark = pytest.mark.anyio

SERVER = str(Path(__file__).parents[2] / "fixtures" / "sdk_upstream.py")
TIMEOUT = 20.0
"""The client's timeout: generous, since the SDK takes a second or two to import on a busy machine."""
QUICKLY = 5.0
"""Well under TIMEOUT: a failure seen within it was noticed, not waited out."""


def sdk_upstream(env: dict[str, str] | None = None) -> Upstream:
    return Upstream(name="sdk", transport="stdio", command=sys.executable, args=(SERVER,), env=env or {})


@pytest.fixture(scope="module")
async def connected() -> AsyncIterator[UpstreamClient]:
    """One SDK server process shared by the tests that leave it running."""
    async with connected_client(sdk_upstream(), request_seconds=TIMEOUT) as client:
        yield client


async def test_a_request_after_a_timed_out_one_is_still_answered(connected: UpstreamClient) -> None:
    quick = UpstreamClient(connected.upstream, timeout=0.001, transport=connected.transport)
    quick.version = connected.version
    with pytest.raises(UpstreamUnavailableError):
        await quick.call_tool("count", {"steps": 1000})
    assert (await connected.call_tool("add", {"a": 4, "b": 5}))["structuredContent"] == {"result": 9}


async def test_the_upstream_gets_its_configured_environment_and_not_the_gateways(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STRATUS_TEST_SECRET", "not for upstreams")
    assert "STRATUS_TEST_SECRET" not in stdio.upstream_environment({})
    client = UpstreamClient(sdk_upstream({"GREETING": "hi"}), timeout=TIMEOUT)
    try:
        await client.connect()
        seen = await client.call_tool("environment", {"names": ["GREETING", "STRATUS_TEST_SECRET", "PATH"]})
    finally:
        await client.close()
    assert seen["structuredContent"] == {"GREETING": "hi", "PATH": os.environ["PATH"]}


async def test_a_process_dying_mid_call_fails_the_call_and_every_later_one_at_once() -> None:
    client = UpstreamClient(sdk_upstream(), timeout=TIMEOUT)
    try:
        await client.connect()
        with pytest.raises(UpstreamUnavailableError):
            async with asyncio.timeout(QUICKLY):
                await client.call_tool("die", {})
        with pytest.raises(UpstreamUnavailableError):
            async with asyncio.timeout(QUICKLY):
                await client.call_tool("add", {"a": 1, "b": 2})
    finally:
        await client.close()


async def test_a_message_over_the_line_bound_is_an_error_not_a_hang() -> None:
    upstream = sdk_upstream()
    transport = StdioTransport(sys.executable, (SERVER,), {}, timeout=TIMEOUT, max_line_bytes=64 * 1024)
    client = UpstreamClient(upstream, timeout=TIMEOUT, transport=transport)
    try:
        await client.connect()
        assert text_of(await client.call_tool("big", {"size": 1000})) == "x" * 1000
        with pytest.raises(UpstreamUnavailableError):
            async with asyncio.timeout(QUICKLY):
                await client.call_tool("big", {"size": 200_000})
    finally:
        await client.close()
    assert transport.process is not None and transport.process.returncode is not None


async def test_a_chatty_stderr_is_drained_to_the_log_and_never_blocks_the_upstream(
    connected: UpstreamClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="stratus.gateway"):
        shouted = await connected.call_tool("shout", {"size": 1_000_000})  # far more than a pipe holds
    assert shouted["structuredContent"] == {"result": 1_000_000}
    assert any(getattr(record, "gateway_stderr", "").startswith("!") for record in caplog.records)


async def test_close_ends_the_process_and_leaves_no_zombie() -> None:
    client = UpstreamClient(sdk_upstream(), timeout=TIMEOUT)
    await client.connect()
    transport = client.transport
    assert isinstance(transport, StdioTransport) and transport.process is not None
    await client.close()
    assert transport.process.returncode == 0  # it exited on its own once its input closed
    assert_reaped(transport.process.pid)
    with pytest.raises(UpstreamUnavailableError):
        await client.call_tool("add", {"a": 1, "b": 2})


@pytest.mark.parametrize(
    "program",
    [
        "import signal; signal.pause()",  # ignores its closed input: terminated
        "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.pause()",  # ignores SIGTERM: killed
    ],
)
async def test_a_process_that_will_not_exit_is_terminated_then_killed(
    program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stdio, "EXIT_SECONDS", 0.5)
    transport = StdioTransport(sys.executable, ("-c", program), {}, timeout=TIMEOUT)
    await transport.open()
    assert transport.process is not None
    async with asyncio.timeout(QUICKLY):
        await transport.close()
    assert transport.process.returncode is not None and transport.process.returncode < 0  # ended by a signal
    assert_reaped(transport.process.pid)


async def test_a_command_that_cannot_start_is_unavailable() -> None:
    client = UpstreamClient(Upstream(name="gone", transport="stdio", command="/nonexistent/mcp-server"))
    with pytest.raises(UpstreamUnavailableError):
        await client.connect()
    await client.close()


def assert_reaped(pid: int) -> None:
    """The process is gone from the process table: a zombie would still accept signal 0."""
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_lone_surrogate_in_an_argument_is_the_callers_invalid_input_not_an_upstream_failure(
    connected: UpstreamClient,
) -> None:
    with pytest.raises(UnencodableTextError) as refused:
        await connected.call_tool("add", {"a": "\ud800", "b": 1})
    assert refused.value.code == -32602 and refused.value.http_status == 400
    assert not is_failure(refused.value)  # no breaker counts it
    assert (await connected.call_tool("add", {"a": 4, "b": 5}))["structuredContent"] == {"result": 9}
