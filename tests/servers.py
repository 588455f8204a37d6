"""A real HTTP server for tests: uvicorn on 127.0.0.1 (an ephemeral port) in a background thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import pytest
import uvicorn

from core.transport.asgi import ASGIApp

STARTUP_TIMEOUT_SECONDS = 10.0
SHUTDOWN_TIMEOUT_SECONDS = 10.0


@contextmanager
def uvicorn_serving(
    app: ASGIApp, *, lifespan: Literal["auto", "on", "off"] = "off", host: str = "127.0.0.1", port: int = 0
) -> Iterator[str]:
    """Serve `app` on `host` (a loopback address: Linux routes all of 127.0.0.0/8 to lo) until the block ends;
    yields its base URL. Start-up and shut-down are bounded in time."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan=lifespan)
    http_server = uvicorn.Server(config)
    thread = threading.Thread(target=http_server.run, name="stratus-uvicorn", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while not http_server.started:
            if not thread.is_alive():
                pytest.fail("uvicorn exited before it started")
            if time.monotonic() > deadline:
                pytest.fail(f"uvicorn did not start within {STARTUP_TIMEOUT_SECONDS} s")
            time.sleep(0.01)  # polling a thread's flag: bounded by the deadline above
        port = http_server.servers[0].sockets[0].getsockname()[1]  # the one asked for, or the one given
        yield f"http://{host}:{port}"
    finally:
        http_server.should_exit = True
        thread.join(SHUTDOWN_TIMEOUT_SECONDS)
        assert not thread.is_alive(), "uvicorn did not shut down"


class LoopWatch:
    """Wraps an app to learn the event loop serving it, so the test can count that loop's tasks."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.loop = self.loop or asyncio.get_running_loop()
        await self.app(scope, receive, send)

    def run(self, step: Any) -> Any:
        """Run a coroutine on the server's loop and wait (at most 5 s) for its result."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(step, self.loop).result(timeout=5)

    def tasks(self) -> int:
        async def count() -> int:
            return len(asyncio.all_tasks())

        return int(self.run(count()))
