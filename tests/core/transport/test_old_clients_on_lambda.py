"""Clients that choose a protocol version before 2025-11-25 cannot pin a Lambda invocation with their GET stream.

On Lambda (`Settings.lambda_host`, as the Lambda entry points build the app) such a stream is a poll like any other:
it relays what happened since its `Last-Event-ID` and ends with an event carrying the id to come back with and a
`retry:`, so a client that opens it and leaves holds nothing. The official Python client pinned to 2025-06-18 comes
back by itself, with `Last-Event-ID`, and still receives the server's notifications. In a long-lived process the
stream is held, as before (nothing bills it there).
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator

import anyio
import anyio.to_thread
import httpx
import mcp.client.session
import pytest
from mcp import Client
from mcp_types import ToolListChangedNotification

from stratus import Settings, build_app
from stratus.types import ASGIApp, Receive, Scope, Send
from tests.fixtures.apps import shared
from tests.fixtures.sdk_sign_in import SCRIPTS, sdk_python
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, McpHttp, sse_fields

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
OLD = "2025-06-18"
BOUND = 10.0
OLD_VERSION_CLIENT = SCRIPTS / "python_130_old_version.py"


class GetCounter:
    """The app, counting the GET requests to `/mcp` and those that came back with `Last-Event-ID` (`came_back` is set
    at the second of those: it runs on the server's thread).

    `posts_after_return`: a POST after the handshake's two (initialize, then notifications/initialized) is held (at
    most `BOUND` seconds) until the client has come back with its GET stream's place once, so what that POST
    publishes reaches it on a poll that resumed, not on the first, however the two race."""

    def __init__(self, app: ASGIApp, *, posts_after_return: bool = False) -> None:
        self.app = app
        self.gets = 0
        self.resumed = 0
        self.came_back = threading.Event()
        self.returned = threading.Event()
        self.posts_after_return = posts_after_return
        self.posts = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/mcp":
            if scope["method"] == "GET":
                self.gets += 1
                self.resumed += any(name == b"last-event-id" for name, _ in scope["headers"])
                if self.resumed >= 1:
                    self.returned.set()
                if self.resumed >= 2:
                    self.came_back.set()
            elif scope["method"] == "POST":
                self.posts += 1
                if self.posts_after_return and self.posts > 2:
                    await anyio.to_thread.run_sync(self.returned.wait, BOUND)
        await self.app(scope, receive, send)


@pytest.fixture
def pinned_sdk(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The official Python client asks for 2025-06-18 in its handshake, as an older host would."""
    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", OLD)
    yield


async def test_on_lambda_an_old_clients_get_stream_ends_at_once_with_where_to_come_back() -> None:
    with uvicorn_serving(build_app(shared, Settings(lambda_host=True))) as base:
        async with httpx.AsyncClient(base_url=base, timeout=BOUND) as http:
            session = await McpHttp(http).initialize(OLD)
            assert session.version == OLD
            with anyio.fail_after(BOUND):  # held, the stream would run up to STRATUS_MAX_STREAM_SECONDS (840 s)
                polled = await http.get("/mcp", headers={**BASE_HEADERS, **session.headers})
    assert polled.status_code == 200 and polled.headers["content-type"] == "text/event-stream"
    place = sse_fields(polled.text)[-1]
    assert place["id"].startswith("g-") and place["retry"] == "5000"


async def test_on_lambda_the_official_client_pinned_to_an_old_version_polls_and_still_gets_notifications(
    pinned_sdk: None,
) -> None:
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            changed.set()

    counted = GetCounter(build_app(shared, Settings(lambda_host=True, poll_retry_seconds=0.1)))
    with uvicorn_serving(counted) as base:
        with anyio.fail_after(BOUND):
            async with Client(f"{base}/mcp", mode="legacy", message_handler=on_message) as client:
                assert client.protocol_version == OLD
                # The stream ended, and the client came back with its place, twice.
                assert await anyio.to_thread.run_sync(counted.came_back.wait, BOUND)
                await client.call_tool("reshuffle_tools", {})
                await changed.wait()  # relayed by a later poll of its GET stream
    assert counted.gets > counted.resumed >= 2


async def test_on_lambda_the_python_sdk_130_pinned_to_an_old_version_comes_back_and_hears_a_list_change() -> None:
    """SDK 1.30, run as a host runs it (its own venv, scripts/sdk-clients-install), asks for 2025-06-18."""
    python = sdk_python("python-1.30")
    app = build_app(shared, Settings(lambda_host=True, poll_retry_seconds=0.1))
    counted = GetCounter(app, posts_after_return=True)
    with uvicorn_serving(counted) as base:
        with anyio.fail_after(30):
            ran = await anyio.run_process(
                [python, "-I", str(OLD_VERSION_CLIENT), f"{base}/mcp", OLD], check=False, stdin=subprocess.DEVNULL
            )
    printed = ran.stdout.decode().splitlines()
    assert ran.returncode == 0 and printed == [f"VERSION {OLD}", "HEARD"], ran.stderr.decode()[-2000:]
    assert counted.resumed >= 1  # its GET stream ended, and it came back with its place
