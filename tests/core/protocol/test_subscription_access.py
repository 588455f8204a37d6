"""A resource subscription is held to what a `resources/read` of its URI would allow: the resource (or template)
must exist and the caller must pass the server's authenticators and the item's scopes, roles and guards. A
handshake-era `resources/subscribe` is refused with the error the read would give; a 2026-07-28
`subscriptions/listen` acknowledges (and relays) only the URIs the caller could read, as the spec's acknowledged
filter is "the subset the server agreed to honor"."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx
import pytest

from stratus import Context, McpServer, Settings, build_app
from stratus.server.principal import Principal
from tests.fixtures.clients import McpFactory
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, STATELESS, HandshakeSession, McpHttp, stateless_meta

pytestmark = [pytest.mark.anyio]

PUBLIC = "board://public"
ADMIN_ONLY = "board://admin"
UNKNOWN = "board://nowhere"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


async def header_user(ctx: Context) -> Principal | None:
    """The caller named in X-Test-User, with the roles of X-Test-Roles."""
    headers = ctx.request.headers if ctx.request else {}
    if "x-test-user" not in headers:
        return None
    return Principal(headers["x-test-user"], roles=frozenset(headers.get("x-test-roles", "").split()))


async def no_weekends(ctx: Context) -> bool:
    return ctx.request is not None and ctx.request.headers.get("x-test-day") != "sunday"


def make_server() -> McpServer:
    server = McpServer("subscriptions", authenticators=[header_user])

    @server.resource(PUBLIC)
    def public() -> str:
        return "for everyone"

    @server.resource(ADMIN_ONLY, roles=["admin"])
    def admin() -> str:
        return "for admins"

    @server.resource("secret://{name}", roles=["admin"], guards=[no_weekends])
    def secret(name: str) -> str:
        return f"secret {name}"

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        await ctx.notify_resource_updated(uri)
        return "touched"

    return server


ALICE = {"x-test-user": "alice"}
ADMIN = {"x-test-user": "root", "x-test-roles": "admin"}


async def _session_of(mcp_factory: McpFactory, headers: dict[str, str]) -> HandshakeSession:
    """A session opened, and used, by the caller these headers name (a session belongs to its principal)."""
    mcp = await mcp_factory(make_server())
    mcp.http.headers.update(headers)
    return await mcp.initialize()


@pytest.mark.parametrize(
    ("uri", "headers", "status", "code"),
    [
        (ADMIN_ONLY, ALICE, 403, -31403),
        (ADMIN_ONLY, {}, 401, -31401),
        ("secret://plans", ALICE, 403, -31403),
        ("secret://plans", {**ADMIN, "x-test-day": "sunday"}, 403, -31403),
        (UNKNOWN, ALICE, 200, -32002),
    ],
)
async def test_a_handshake_subscription_is_refused_as_a_read_of_its_uri_would_be(
    mcp_factory: McpFactory, uri: str, headers: dict[str, str], status: int, code: int
) -> None:
    session = await _session_of(mcp_factory, headers)
    read = await session.request("resources/read", {"uri": uri})
    subscribed = await session.request("resources/subscribe", {"uri": uri})
    assert (subscribed.status_code, subscribed.json()["error"]["code"]) == (status, code)
    assert (read.status_code, read.json()["error"]["code"]) == (status, code)


async def test_a_handshake_subscription_the_caller_may_read_is_kept(mcp_factory: McpFactory) -> None:
    for uri, headers in ((PUBLIC, {}), (ADMIN_ONLY, ADMIN), ("secret://plans", ADMIN)):
        session = await _session_of(mcp_factory, headers)
        subscribed = await session.request("resources/subscribe", {"uri": uri})
        assert subscribed.json() == {"jsonrpc": "2.0", "id": subscribed.json()["id"], "result": {}}


async def _messages(response: httpx.Response) -> AsyncGenerator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.startswith("data: ") and line[6:]:
            yield json.loads(line[6:])


@pytest.mark.uvicorn
async def test_a_listener_is_acknowledged_and_told_only_about_resources_it_may_read() -> None:
    """Alice asks for updates of a public resource, an admin-only one, an admin-only template's URI and an unknown
    URI: the acknowledgment names the public one alone, and of two updates she hears only the public one's."""
    headers = {**BASE_HEADERS, **ALICE, "mcp-protocol-version": STATELESS, "mcp-method": "subscriptions/listen"}
    asked = [ADMIN_ONLY, "secret://plans", UNKNOWN, PUBLIC]
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {"_meta": stateless_meta(), "notifications": {"resourceSubscriptions": asked}},
    }
    with uvicorn_serving(build_app(make_server(), Settings())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            caller = McpHttp(http)
            with anyio.fail_after(10):
                async with http.stream("POST", "/mcp", json=body, headers=headers) as stream:
                    assert stream.status_code == 200
                    listened = _messages(stream)
                    ack = await anext(listened)
                    assert ack["params"] == {
                        "_meta": {SUBSCRIPTION_ID: "listen-1"},
                        "notifications": {"resourceSubscriptions": [PUBLIC]},
                    }
                    for uri in (ADMIN_ONLY, PUBLIC):
                        touched = await caller.stateless("tools/call", {"name": "touch", "arguments": {"uri": uri}})
                        assert touched.json()["result"]["content"] == [{"type": "text", "text": "touched"}]
                    updated = await anext(listened)
                    assert updated["params"] == {"_meta": {SUBSCRIPTION_ID: "listen-1"}, "uri": PUBLIC}
                    await listened.aclose()


@pytest.mark.uvicorn
async def test_an_admin_listener_is_acknowledged_for_what_an_admin_may_read() -> None:
    headers = {**BASE_HEADERS, **ADMIN, "mcp-protocol-version": STATELESS, "mcp-method": "subscriptions/listen"}
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "subscriptions/listen",
        "params": {
            "_meta": stateless_meta(),
            "notifications": {"resourceSubscriptions": [ADMIN_ONLY, UNKNOWN, "secret://plans", PUBLIC]},
        },
    }
    with uvicorn_serving(build_app(make_server(), Settings())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            with anyio.fail_after(10):
                async with http.stream("POST", "/mcp", json=body, headers=headers) as stream:
                    listened = _messages(stream)
                    ack = await anext(listened)
                    await listened.aclose()
    assert ack["params"]["notifications"] == {"resourceSubscriptions": [ADMIN_ONLY, "secret://plans", PUBLIC]}
