"""The server the emulator tests deploy (`STRATUS_APP=tests.emulator.apps:probe`): tools that show which container
served a call and whether code runs between invocations."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from core import Context, McpServer

probe = McpServer("probe", "1.0.0")
WAIT_SECONDS = 15.0
TICK_SECONDS = 0.01
_tickers: set[asyncio.Task[None]] = set()


@probe.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@probe.tool()
def whoami() -> int:
    """The PID of the process serving the call: the container's."""
    return os.getpid()


async def _until(condition: Callable[[], bool]) -> None:
    """Polls what another process writes (a file: no event can tell), for at most 15 s."""
    async with asyncio.timeout(WAIT_SECONDS):
        while not condition():  # noqa: ASYNC110 - the writer is another process
            await asyncio.sleep(TICK_SECONDS)


@probe.tool(timeout=20)
async def hold_until(path: str) -> int:
    """Keeps its container busy until `path` exists (at most 15 s); answers the container's PID."""
    await _until(Path(path).exists)
    return os.getpid()


def _ticks(path: str) -> int:
    file = Path(path)
    return len(file.read_text()) if file.exists() else 0


async def _tick(path: str) -> None:
    while True:
        with Path(path).open("a") as file:  # noqa: ASYNC230 - one byte to a local file
            file.write("x")
        await asyncio.sleep(TICK_SECONDS)


@probe.tool(timeout=20)
async def start_ticker(path: str, ticks: int) -> int:
    """Starts a background task that appends to `path` every 10 ms, and answers once it has ticked `ticks` times
    (at most 15 s): the count then."""
    task = asyncio.get_running_loop().create_task(_tick(path))
    _tickers.add(task)
    await _until(lambda: _ticks(path) >= ticks)
    return _ticks(path)


@probe.tool(timeout=20)
async def ticks_past(path: str, count: int) -> int:
    """Answers once `path` holds more than `count` ticks (at most 15 s): the count then."""
    await _until(lambda: _ticks(path) > count)
    return _ticks(path)


@probe.tool()
async def count_to_three(ctx: Context) -> int:
    """Reports progress three times (an SSE answer when the client asked for progress); answers the PID."""
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"step {step}")
    return os.getpid()


@probe.tool(task="optional")
def where() -> int:
    """The PID of the process running it; a client that asks runs it as a task (on Lambda: the task worker's)."""
    return os.getpid()
