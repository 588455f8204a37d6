"""`stratus serve --transport stdio` (or `MCP_TRANSPORT_TYPE=stdio`): the same server for desktop hosts, driven by
the official SDK's stdio client in both eras, with progress, log messages and sampling crossing the pipe."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, types
from mcp.client.client import ConnectMode
from mcp.client.stdio import StdioServerParameters

from tests.fixtures.sdk_answers import answer_sampling

pytestmark = pytest.mark.anyio
TIMEOUT_SECONDS = 30
STRATUS = str(Path(sys.executable).parent / "stratus")


def _server(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("STRATUS_", "MCP_"))}
    return StdioServerParameters(
        command=STRATUS,
        args=["serve", "--app", "tests.fixtures.apps:shared", *args],
        env={**environment, **(env or {})},
    )


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_the_sdk_stdio_client_lists_and_calls_tools(mode: ConnectMode, version: str) -> None:
    with anyio.fail_after(TIMEOUT_SECONDS):
        async with Client(_server("--transport", "stdio"), mode=mode, read_timeout_seconds=10) as client:
            assert client.protocol_version == version
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {"add", "count_to_three", "ask_model"} <= names
            result = await client.call_tool("add", {"a": 40, "b": 2})
    assert result.structured_content == {"result": 42}


async def test_progress_logs_and_sampling_cross_the_pipe_of_a_handshake_session() -> None:
    steps: list[float] = []
    logs: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append(progress)

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    with anyio.fail_after(TIMEOUT_SECONDS):
        async with Client(
            _server(env={"MCP_TRANSPORT_TYPE": "stdio"}),
            mode="legacy",
            read_timeout_seconds=10,
            sampling_callback=answer_sampling,
            logging_callback=on_log,
        ) as client:
            counted = await client.call_tool("count_to_three", {}, progress_callback=on_progress)
            sampled = await client.call_tool("ask_model", {"question": "2+2?"})
    assert counted.content[0].text == "done"  # type: ignore[union-attr]
    assert steps == [1, 2, 3] and logs == ["counting"]
    assert sampled.content[0].text == "model said: an answer to 2+2?"  # type: ignore[union-attr]
