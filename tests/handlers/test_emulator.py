"""`stratus local`: API Gateway emulated in front of the real buffered handler, driven by the official SDK."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest
from mcp import Client

from core import Settings
from examples.demo import server as demo_server
from handlers.emulator import GatewayEmulator
from tests.fixtures.processes import stratus_process
from tests.fixtures.servers import uvicorn_serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


@pytest.fixture(scope="module", params=["v2", "v1"])
def emulated(request: pytest.FixtureRequest) -> Iterator[str]:
    emulator = GatewayEmulator(demo_server, Settings(), payload=request.param)
    try:
        with uvicorn_serving(emulator) as url:
            yield f"{url}/mcp"
    finally:
        emulator.close()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_sdk_lists_and_calls_tools_through_the_emulated_gateway(emulated: str, mode: str) -> None:
    with anyio.fail_after(20):
        async with Client(emulated, mode=mode) as client:
            tools = await client.list_tools()
            assert [tool.name for tool in tools.tools] == ["add", "forecast", "divide"]
            result = await client.call_tool("add", {"a": 2, "b": 5})
            assert result.structured_content == {"result": 7}


async def test_the_rest_api_answers_through_the_buffered_handler_and_refuses_to_stream(emulated: str) -> None:
    json_body = {"content-type": "application/json"}
    async with httpx.AsyncClient(base_url=emulated.removesuffix("/mcp"), timeout=10) as http:
        created = await http.post("/session", headers=json_body)
        assert created.status_code == 200
        session_id = created.json()["sessionId"]
        added = await http.post(
            "/mcp",
            json={
                "sessionId": session_id,
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
            },
            headers=json_body,
        )
        assert added.status_code == 200 and added.json()["result"]["structuredContent"] == {"result": 3}
        events = await http.get(f"/events/{session_id}")
        assert events.status_code == 405  # a buffered response cannot stream: the streaming function serves /events
        assert (await http.delete(f"/session/{session_id}")).status_code == 200
        assert (await http.delete(f"/session/{session_id}")).status_code == 404


async def test_the_emulated_gateway_serves_the_address_it_listens_on_not_the_host_a_client_names(
    emulated: str,
) -> None:
    """API Gateway's `domainName` is the API's own; the emulator's is the address the client connected to, so a
    rebound page (the attacker's Host and Origin) is refused as `stratus serve` refuses it."""
    attacker = "rebound.attacker.example"
    async with httpx.AsyncClient(base_url=emulated.removesuffix("/mcp"), timeout=10) as http:
        rebound = await http.post(
            "/session",
            headers={"content-type": "application/json", "host": attacker, "origin": f"http://{attacker}"},
        )
        assert rebound.status_code == 421
        assert "access-control-allow-origin" not in rebound.headers
        address = emulated.removeprefix("http://").split("/")[0]
        own = await http.post("/session", headers={"content-type": "application/json", "host": address})
        assert own.status_code == 200


@pytest.mark.parametrize(("shape", "progress_seen"), [("buffered", []), ("streaming", [1, 2, 3])])
async def test_stratus_local_serves_both_lambda_shapes(shape: str, progress_seen: list[float]) -> None:
    """Buffered answers JSON only, so progress never reaches the client; the streaming shape streams it."""
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    command_line = ("local", "--shape", shape)
    with stratus_process("tests.fixtures.apps:shared", {"STRATUS_SECRET_KEY": "k"}, command_line=command_line) as url:
        with anyio.fail_after(20):
            async with Client(f"{url}/mcp", mode="legacy") as client:
                counted = await client.call_tool("count_to_three", {}, progress_callback=on_progress)
    assert counted.content[0].text == "done"  # type: ignore[union-attr]
    assert seen == progress_seen
