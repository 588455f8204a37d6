"""The best Mangum set-up we found for the official SDK and FastMCP on Lambda.

Their Streamable HTTP apps run a session manager in the ASGI lifespan, and that manager may start only once per
instance; Mangum's `lifespan="auto"` starts and stops the lifespan around every invocation, so the second one
fails. Instead the lifespan starts once, at import (the cold start), as a task on the event loop Mangum reuses
for every invocation, and is never shut down (a Lambda container simply stops); Mangum runs with
`lifespan="off"`.
"""

from __future__ import annotations

import asyncio
from typing import Any

_RUNNING: list[asyncio.Task[Any]] = []


async def start_lifespan(app: Any) -> None:
    """Run `app`'s lifespan startup on the running loop, leaving the lifespan task running there."""
    started: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def receive() -> dict[str, Any]:
        if not started.done():
            return {"type": "lifespan.startup"}
        await asyncio.Event().wait()
        return {"type": "lifespan.shutdown"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            started.set_result(None)
        elif message["type"] == "lifespan.startup.failed":
            started.set_exception(RuntimeError(message.get("message", "lifespan startup failed")))

    lifespan = asyncio.ensure_future(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send))
    _RUNNING.append(lifespan)  # referenced for the life of the process
    await started


def start_lifespan_once(app: Any) -> None:
    """Run `app`'s lifespan startup on a new current event loop, leaving it running there."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(start_lifespan(app))
