"""The session REST API answers in its own shape with an HTTP status, never a JSON-RPC envelope: a session whose
record would be past what the store keeps is 413 naming STRATUS_MAX_RECORD_BYTES, and a REST call of a method that
only makes sense on the JSON-RPC wire (`initialize`, which would open a session nobody is told of) is 400 pointing
at POST /session. Served by uvicorn on 127.0.0.1."""

from __future__ import annotations

import httpx
import pytest

from stratus import McpServer, Settings, build_app
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from tests.fixtures.apps import shared
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import initialize_message

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

JSON = {"content-type": "application/json"}


async def test_a_session_past_the_record_limit_is_413_naming_the_setting_and_nothing_is_kept() -> None:
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600), max_record_bytes=2000)
    with uvicorn_serving(build_app(shared, Settings(max_record_bytes=2000), stores=stores)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            large = {"capabilities": {"elicitation": {"note": "x" * 3000}}}
            refused = await http.post("/session", json=large, headers=JSON)
            fits = await http.post("/session", json={"capabilities": {"elicitation": {}}}, headers=JSON)
    assert refused.status_code == 413
    answer = refused.json()
    assert "jsonrpc" not in answer and "id" not in answer
    assert answer["setting"] == "STRATUS_MAX_RECORD_BYTES" and answer["limit"] == 2000
    assert "STRATUS_MAX_RECORD_BYTES" in answer["error"]
    assert fits.status_code == 200
    assert (await stores.sessions.census()).active == 1


async def test_a_rest_call_that_outgrows_the_session_record_is_413_naming_the_setting() -> None:
    notes = McpServer("notes")

    @notes.resource("note://{name}")
    def note(name: str) -> str:
        return name

    with uvicorn_serving(build_app(notes, Settings(max_record_bytes=2000))) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            session_id = (await http.post("/session", headers=JSON)).json()["sessionId"]
            statuses = []
            for name in ("a" * 900, "b" * 900, "c" * 900):
                params = {"uri": f"note://{name}"}
                body = {"sessionId": session_id, "method": "resources/subscribe", "params": params}
                answer = await http.post("/mcp", json=body, headers=JSON)
                statuses.append(answer.status_code)
    assert statuses == [200, 200, 413]
    assert answer.json()["error"]["data"]["setting"] == "STRATUS_MAX_RECORD_BYTES"


@pytest.mark.parametrize("method", ["initialize", "notifications/initialized"])
async def test_a_rest_call_of_a_json_rpc_lifecycle_method_is_400_pointing_at_post_session(method: str) -> None:
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    with uvicorn_serving(build_app(shared, Settings(), stores=stores)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            session_id = (await http.post("/session", headers=JSON)).json()["sessionId"]
            params = initialize_message()["params"]
            for named in (session_id, "made-up"):
                body = {"sessionId": named, "method": method, "params": params}
                refused = await http.post("/mcp", json=body, headers=JSON)
                assert refused.status_code == 400, refused.text
                assert refused.json()["sessionId"] == named
                assert refused.json()["error"]["code"] == -32600
                assert "POST /session" in refused.json()["error"]["message"]
                assert "mcp-session-id" not in refused.headers
    assert (await stores.sessions.census()).active == 1  # the one POST /session opened
