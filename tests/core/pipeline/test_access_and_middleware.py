"""Global guards, per-item authorization and middleware order, through the HTTP endpoint."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from stratus import Context, McpServer
from stratus.metrics import LocalMetrics
from stratus.pipeline.current import current_context
from stratus.server.policy import CallNext
from stratus.server.principal import Principal
from tests.fixtures.clients import McpFactory, client_for
from tests.fixtures.wire import McpHttp

pytestmark = pytest.mark.anyio

order: list[str] = []


async def header_user(ctx: Context) -> Principal | None:
    """A global guard for tests: the caller named in X-Test-User, with scopes and roles from other headers."""
    headers = ctx.request.headers if ctx.request else {}
    if "x-test-user" not in headers:
        return None
    return Principal(
        headers["x-test-user"],
        scopes=frozenset(headers.get("x-test-scopes", "").split()),
        roles=frozenset(headers.get("x-test-roles", "").split()),
    )


async def outer(ctx: Context, call_next: CallNext) -> Any:
    order.append("server:before")
    result = await call_next(dataclasses.replace(ctx, metadata={**ctx.metadata, "tenant": "acme"}))
    order.append("server:after")
    return result


async def inner(ctx: Context, call_next: CallNext) -> Any:
    order.append(f"tool:{ctx.metadata['tenant']}")
    result = await call_next(ctx)
    result["content"].append({"type": "text", "text": "(checked)"})
    return result


async def weekdays_only(ctx: Context) -> bool:
    return ctx.request is not None and ctx.request.headers.get("x-test-day") != "sunday"


def make_server() -> McpServer:
    server = McpServer("access", authenticators=[header_user], middleware=[outer])

    @server.tool(middleware=[inner], public=True)
    def hello() -> str:
        order.append("handler")
        return f"hello {current_context().metadata['tenant']}"

    @server.tool(scopes=["reports:read", "reports:write"])
    def report() -> str:
        user = current_context().user
        return f"report for {user.subject if user else '?'}"

    @server.tool(roles=["admin", "operator"])
    def restart() -> str:
        return "restarted"

    @server.tool(guards=[weekdays_only], scopes=["ops"])
    def deploy() -> str:
        return "deployed"

    @server.tool()
    def whoami(ctx: Context) -> str:
        return ctx.user.subject if ctx.user else "anonymous"

    return server


@pytest.fixture
async def mcp(mcp_factory: McpFactory) -> McpHttp:
    return await mcp_factory(make_server(), metrics=LocalMetrics())


async def test_server_middleware_wraps_tool_middleware_which_wraps_the_handler(mcp: McpHttp) -> None:
    order.clear()
    result = (await mcp.stateless("tools/call", {"name": "hello"})).json()["result"]
    assert order == ["server:before", "tool:acme", "handler", "server:after"]
    assert result["content"] == [{"type": "text", "text": "hello acme"}, {"type": "text", "text": "(checked)"}]


async def test_a_restricted_tool_without_a_user_is_401_with_a_bearer_challenge(mcp: McpHttp) -> None:
    response = await mcp.stateless("tools/call", {"name": "report"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == -31401


async def test_missing_scope_is_403_insufficient_scope_naming_the_scopes(mcp: McpHttp) -> None:
    headers = {"x-test-user": "ana", "x-test-scopes": "reports:read"}
    response = await mcp.stateless("tools/call", {"name": "report"}, headers=headers)
    assert response.status_code == 403
    assert (
        response.headers["www-authenticate"] == 'Bearer error="insufficient_scope", scope="reports:read reports:write"'
    )
    assert response.json()["error"]["code"] == -31403


async def test_all_scopes_let_the_user_in_and_the_context_carries_the_user(mcp: McpHttp) -> None:
    headers = {"x-test-user": "ana", "x-test-scopes": "reports:write reports:read"}
    response = await mcp.stateless("tools/call", {"name": "report"}, headers=headers)
    assert response.json()["result"]["content"] == [{"type": "text", "text": "report for ana"}]


async def test_one_of_the_roles_is_enough(mcp: McpHttp) -> None:
    denied = await mcp.stateless(
        "tools/call", {"name": "restart"}, headers={"x-test-user": "bo", "x-test-roles": "viewer"}
    )
    assert denied.status_code == 403
    allowed = await mcp.stateless(
        "tools/call", {"name": "restart"}, headers={"x-test-user": "bo", "x-test-roles": "operator"}
    )
    assert allowed.status_code == 200


async def test_a_custom_guard_can_deny_after_scopes_pass(mcp: McpHttp) -> None:
    headers = {"x-test-user": "cy", "x-test-scopes": "ops"}
    assert (await mcp.stateless("tools/call", {"name": "deploy"}, headers=headers)).status_code == 200
    sunday = await mcp.stateless("tools/call", {"name": "deploy"}, headers={**headers, "x-test-day": "sunday"})
    assert sunday.status_code == 403 and sunday.json()["error"]["code"] == -31403


async def test_unrestricted_tools_run_with_or_without_a_user(mcp: McpHttp) -> None:
    anonymous = (await mcp.stateless("tools/call", {"name": "whoami"})).json()["result"]["content"][0]["text"]
    known = await mcp.stateless("tools/call", {"name": "whoami"}, headers={"x-test-user": "di"})
    assert anonymous == "anonymous" and known.json()["result"]["content"][0]["text"] == "di"


def test_current_context_outside_a_request_is_a_lookup_error() -> None:
    with pytest.raises(LookupError):
        current_context()


async def test_resources_and_prompts_are_authorized_too() -> None:
    server = McpServer("guarded", authenticators=[header_user])

    @server.resource("secret://plans", scopes=["plans"])
    def plans() -> str:
        return "the plans"

    @server.prompt(roles=["writer"])
    def draft() -> str:
        """Draft something."""
        return "draft"

    async with client_for(server) as http:
        mcp = McpHttp(http)
        assert (await mcp.stateless("resources/read", {"uri": "secret://plans"})).status_code == 401
        granted = await mcp.stateless(
            "resources/read", {"uri": "secret://plans"}, headers={"x-test-user": "e", "x-test-scopes": "plans"}
        )
        assert granted.json()["result"]["contents"][0]["text"] == "the plans"
        refused = await mcp.stateless("prompts/get", {"name": "draft"}, headers={"x-test-user": "e"})
        assert refused.status_code == 403


async def test_authorization_runs_before_any_middleware() -> None:
    seen: list[str] = []

    async def record(ctx: Context, call_next: CallNext) -> Any:
        seen.append(ctx.item or "")
        return await call_next(ctx)

    server = McpServer("order", authenticators=[header_user], middleware=[record])

    @server.tool(scopes=["admin"])
    def secret() -> str:
        return "secret"

    async with client_for(server) as http:
        mcp = McpHttp(http)
        assert (await mcp.stateless("tools/call", {"name": "secret"})).status_code == 401
        assert seen == []
        granted = await mcp.stateless(
            "tools/call", {"name": "secret"}, headers={"x-test-user": "a", "x-test-scopes": "admin"}
        )
        assert granted.status_code == 200 and seen == ["secret"]
