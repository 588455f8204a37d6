"""A call refused for any reason spends nothing: no rate-limit token, no half-open breaker trial.

Found by an adversarial review: made-up `Mcp-Session-Id`s (each answered 404), unauthenticated or unauthorized
calls, and calls over one bucket used to take from every bucket and from the breaker before being refused, so
anyone could exhaust a tool's server-wide limit or hold its circuit open for real users.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from stratus import Context, McpServer, ToolError
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.server.policy import RateLimits
from stratus.server.principal import Principal
from stratus.settings import Settings
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from tests.fixtures.clients import McpFactory
from tests.fixtures.clocks import FakeClock
from tests.fixtures.wire import HandshakeSession, McpHttp

pytestmark = pytest.mark.anyio

SLOW = 0.0001  # tokens a second: no bucket refills during a test
Client = Callable[[McpServer], Awaitable[McpHttp]]
MADE_UP = {"mcp-session-id": "made-up-session-id-0123456789", "mcp-protocol-version": "2025-11-25"}


def _call(name: str, request_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": {}}}


async def _denied(ctx: Context) -> Principal | None:
    if ctx.request and ctx.request.headers.get("x-deny"):
        raise ToolError("denied by the authenticator")
    return None


def _server() -> McpServer:
    server = McpServer("limited", rate_limits=RateLimits(per_session=RateLimit(SLOW, burst=1)))

    @server.tool(rate_limit=RateLimit(SLOW, burst=2))
    def scarce() -> str:
        """Two calls for everyone, ever."""
        return "ok"

    return server


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def client(mcp_factory: McpFactory, clock: FakeClock) -> Client:
    """A client of `server` over in-memory stores on the test's clock."""
    return lambda server: mcp_factory(
        server,
        Settings(max_sessions=0),
        stores=build_stores("memory://", StoreOptions(session_ttl_seconds=600, clock=clock)),
    )


@pytest.fixture
async def mcp(client: Client) -> McpHttp:
    return await client(_server())


async def _result(session: HandshakeSession, name: str) -> dict[str, Any]:
    response = await session.request("tools/call", {"name": name, "arguments": {}})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_calls_with_a_made_up_session_leave_the_tool_limit_to_its_users(mcp: McpHttp) -> None:
    for request_id in range(6):
        refused = await mcp.post(_call("scarce", request_id), MADE_UP)
        assert refused.status_code == 404
    for _ in range(2):
        session = await mcp.initialize()
        assert (await _result(session, "scarce"))["result"]["content"][0]["text"] == "ok"


async def test_rest_calls_with_a_made_up_session_leave_the_tool_limit_to_its_users(mcp: McpHttp) -> None:
    made_up = {"sessionId": "made-up-session-id-0123456789", "method": "tools/call", "params": {"name": "scarce"}}
    for _ in range(6):
        assert (await mcp.http.post("/mcp", json=made_up)).status_code == 404
    for _ in range(2):
        session_id = (await mcp.http.post("/session")).json()["sessionId"]
        answer = await mcp.http.post("/mcp", json={**made_up, "sessionId": session_id})
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["content"][0]["text"] == "ok"


async def test_calls_over_their_own_session_limit_leave_the_tool_limit_to_others(mcp: McpHttp) -> None:
    greedy = await mcp.initialize()
    assert "error" not in await _result(greedy, "scarce")
    for _ in range(4):
        assert (await _result(greedy, "scarce"))["error"]["code"] == -31429
    other = await mcp.initialize()
    assert (await _result(other, "scarce"))["result"]["content"][0]["text"] == "ok"


async def test_calls_an_authenticator_refuses_spend_nothing(client: Client) -> None:
    server = McpServer("guarded", authenticators=[_denied], rate_limits=RateLimits(overall=RateLimit(SLOW, burst=1)))

    @server.tool()
    def ping_tool() -> str:
        """Anyone may."""
        return "pong"

    session = await (await client(server)).initialize()
    for _ in range(3):
        denied = await session.request("tools/call", {"name": "ping_tool"}, headers={"x-deny": "1"})
        assert "error" in denied.json() or denied.json()["result"].get("isError")
    assert (await _result(session, "ping_tool"))["result"]["content"][0]["text"] == "pong"


async def test_calls_refused_for_a_missing_scope_spend_nothing(client: Client) -> None:
    server = McpServer("scoped", rate_limits=RateLimits(overall=RateLimit(SLOW, burst=1)))

    @server.tool(scopes=["admin"])
    def restricted() -> str:
        """Admins only."""
        return "secret"

    @server.tool()
    def open_tool() -> str:
        """Anyone may."""
        return "open"

    session = await (await client(server)).initialize()
    for _ in range(3):
        refused = await session.request("tools/call", {"name": "restricted"})
        # Auth is off: no credentials could help, so the refusal is final and names the setting that changes it.
        assert refused.status_code == 403
        assert "STRATUS_AUTH_MODE" in refused.json()["error"]["message"]
    assert (await _result(session, "open_tool"))["result"]["content"][0]["text"] == "open"


async def test_calls_with_a_made_up_session_cannot_hold_a_circuit_open(client: Client, clock: FakeClock) -> None:
    server = McpServer("fragile")
    healthy = {"now": False}

    @server.tool(breaker=BreakerPolicy(failure_threshold=1, window_seconds=60, cooldown_seconds=5))
    def fragile() -> str:
        """Fails until the test says it is healthy."""
        if not healthy["now"]:
            raise RuntimeError("backend down")
        return "back"

    mcp = await client(server)
    session = await mcp.initialize()
    assert (await _result(session, "fragile"))["result"]["isError"] is True  # the circuit opens
    healthy["now"] = True
    clock.advance(5)
    assert (await mcp.post(_call("fragile"), MADE_UP)).status_code == 404  # would have taken the trial
    assert (await _result(session, "fragile"))["result"]["content"][0]["text"] == "back"
