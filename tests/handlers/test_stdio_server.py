"""`stratus serve --transport stdio` (or `MCP_TRANSPORT_TYPE=stdio`): the same server for desktop hosts, driven by
the official SDK's stdio client in both eras, with progress, log messages and sampling crossing the pipe."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, types
from mcp.client.client import ConnectMode
from mcp.client.stdio import StdioServerParameters

from tests.fixtures.sdk_answers import answer_sampling
from tests.fixtures.wire import initialize_message

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


class _Pipe:
    """`stratus serve --transport stdio` driven line by line, every wait bounded."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, message: object) -> None:
        await self.send_line(json.dumps(message).encode())  # ensure_ascii: a lone surrogate travels as `\ud800`

    async def send_line(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        await self.process.stdin.drain()

    async def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        with anyio.fail_after(TIMEOUT_SECONDS):
            line = await self.process.stdout.readline()
        assert line, f"the server ended (exit code {await self.process.wait()})"
        answer: dict[str, Any] = json.loads(line)
        return answer


@contextlib.asynccontextmanager
async def _stdio_pipe(stderr: Path) -> AsyncIterator[_Pipe]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("STRATUS_", "MCP_"))}
    with stderr.open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            STRATUS,
            *("serve", "--app", "tests.fixtures.apps:shared", "--transport", "stdio"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            env=environment,
            limit=2**20,
        )
        try:
            yield _Pipe(process)
        finally:
            if process.returncode is None:
                process.kill()
            with anyio.fail_after(TIMEOUT_SECONDS):
                await process.wait()


async def test_a_lone_surrogate_is_answered_with_a_parse_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    async with _stdio_pipe(tmp_path / "stderr") as pipe:
        await pipe.send({**initialize_message(), "id": "\ud800"})
        refused = await pipe.answer()
        assert refused["error"]["code"] == -32700 and "id" not in refused
        await pipe.send(initialize_message(request_id=1))
        assert (await pipe.answer())["id"] == 1
        await pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add\udfff"}})
        assert (await pipe.answer())["error"]["code"] == -32700
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        stateless = {"name": "\ud800", "arguments": {}, "_meta": meta}
        await pipe.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": stateless})
        assert (await pipe.answer())["error"]["code"] == -32700
        await pipe.send(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
            }
        )
        assert (await pipe.answer())["result"]["structuredContent"] == {"result": 3}
    assert "Traceback" not in (tmp_path / "stderr").read_text(errors="replace")


async def test_a_line_over_16_mib_is_refused_and_the_next_line_is_served(tmp_path: Path) -> None:
    async with _stdio_pipe(tmp_path / "stderr") as pipe:
        padding = "x" * (2**24 + 1000)
        huge = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {"padding": padding}}}
        await pipe.send(huge)
        refused = await pipe.answer()
        assert refused["error"]["code"] == -32600 and "id" not in refused
        await pipe.send(initialize_message(request_id=2))
        assert (await pipe.answer())["id"] == 2
