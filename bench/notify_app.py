"""The server bench/notify.py runs on two processes: one tool that publishes a resource update."""

from __future__ import annotations

import time

from stratus import Context, McpServer

URI = "bench://board"

server = McpServer("notify-bench", "1.0.0")


@server.resource(URI, mime_type="text/plain")
def board() -> str:
    """The resource the bench's client subscribes to (a subscription names a resource the server has)."""
    return "the board"


@server.tool()
async def touch(ctx: Context) -> float:
    """Publishes an update of URI; returns the CLOCK_MONOTONIC time (shared by every process) it started."""
    started = time.monotonic()
    await ctx.notify_resource_updated(URI)
    return started
