"""State that must outlive a container: a session stored in DynamoDB is still there when the process that made
it is gone and a new one serves (Redis keeps it only as long as Redis itself keeps its data)."""

from __future__ import annotations

import secrets

import httpx
import pytest

from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import shared_store_environment, stratus_process
from tests.fixtures.wire import HandshakeSession, McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


@pytest.mark.parametrize("store", ["dynamodb", "redis"])
async def test_a_session_outlives_the_process_that_opened_it(store: str, request: pytest.FixtureRequest) -> None:
    environment = {
        "STRATUS_SECRET_KEY": SECRET_KEY,
        **shared_store_environment(store, request, f"restart-{secrets.token_hex(4)}"),
    }
    with stratus_process("tests.fixtures.apps:shared", environment) as first:
        async with httpx.AsyncClient(base_url=first, timeout=10) as http:
            opened = await McpHttp(http).initialize()
            session_id, version = opened.session_id, opened.version
    with stratus_process("tests.fixtures.apps:shared", environment) as second:  # the first process is gone
        async with httpx.AsyncClient(base_url=second, timeout=10) as http:
            session = HandshakeSession(McpHttp(http), session_id, version)
            answered = await session.request("tools/call", {"name": "add", "arguments": {"a": 40, "b": 2}})
    assert answered.status_code == 200
    assert answered.json()["result"]["structuredContent"] == {"result": 42}
