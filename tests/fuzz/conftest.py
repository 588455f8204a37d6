"""The Lambda handler the fuzz tests drive: one container's event loop, the tests' sample server, no session limit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from stratus import Settings
from stratus.handlers.adapter import make_handler
from tests.fixtures.lambda_events import http_event
from tests.fixtures.lambda_invoke import LambdaContext
from tests.fixtures.sample_server import server
from tests.fixtures.wire import BASE_HEADERS as BASE
from tests.fixtures.wire import initialize_message


@pytest.fixture(scope="module")
def handler() -> Iterator[Any]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    built = make_handler(server, Settings(max_sessions=0))
    yield built
    asyncio.set_event_loop(None)
    loop.close()


@pytest.fixture(scope="module")
def session_id(handler: Any) -> str:
    """A live handshake-era session for the fuzzed legacy requests to run in."""
    opened = handler(http_event(json.dumps(initialize_message()), BASE), LambdaContext())
    session: str = {key.lower(): value for key, value in opened["headers"].items()}["mcp-session-id"]
    handler(
        http_event(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), {**BASE, "mcp-session-id": session}
        ),
        LambdaContext(),
    )
    return session
