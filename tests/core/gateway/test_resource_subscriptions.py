"""A resource subscription made through the gateway is passed to the upstream that owns the resource, and the
upstream's update reaches the subscriber's stream on another gateway container (shared Redis): a handshake-era
upstream (the SDK's own server) is sent `resources/subscribe`; a 2026-07-28 upstream (a Stratus server) is asked
for the URI by the gateway container's `subscriptions/listen` stream, and no longer once the subscription is
withdrawn (`resources/unsubscribe`, or the end of a 2026-07-28 client's own listen)."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx
import pytest

from stratus import Context, McpServer, Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.stores.base import StoreOptions
from stratus.stores.factory import build_stores
from tests.fixtures import sdk_upstream
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import BASE_HEADERS, STATELESS, McpHttp, stateless_meta

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
UPDATED = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": sdk_upstream.BOARD}}


async def _messages(response: httpx.Response) -> AsyncGenerator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.startswith("data: ") and line != "data: ":
            yield json.loads(line.removeprefix("data: "))


def _container(url: str, prefix: str, version: str | None = "2025-11-25") -> Any:
    upstream = Upstream(name="notes", transport="http", url=url, protocol_version=version)
    gateway = GatewayServer([upstream], allowed_networks=["127.0.0.0/8"], use_records=False)
    stores = build_stores("redis://127.0.0.1:6379/0", StoreOptions(session_ttl_seconds=600, prefix=prefix))
    # The subscriber's GET stream holds until the update arrives.
    return build_app(gateway, Settings(secret_key=SECRET_KEY, poll_hold_seconds=30), stores=stores)


async def test_an_upstream_resource_update_reaches_the_subscriber_on_another_container() -> None:
    prefix = f"gw-subs-{secrets.token_hex(4)}"
    with (
        uvicorn_serving(sdk_upstream.subscribable_app(), lifespan="on") as upstream,  # type: ignore[arg-type]
        uvicorn_serving(_container(f"{upstream}/mcp", prefix), lifespan="on") as first,
        uvicorn_serving(_container(f"{upstream}/mcp", prefix), lifespan="on") as second,
    ):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            session = await McpHttp(on_first).initialize()
            headers = {**BASE_HEADERS, **session.headers}
            subscribe = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "resources/subscribe",
                "params": {"uri": sdk_upstream.BOARD},
            }
            answer = await on_first.post("/mcp", json=subscribe, headers=headers)
            assert answer.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
            touch = {"name": "mcp__notes__touch", "arguments": {}}
            with anyio.fail_after(20):
                async with on_second.stream("GET", "/mcp", headers=headers) as stream:
                    assert stream.status_code == 200
                    messages = _messages(stream)
                    # Touched through the second container: the upstream tells the first container's session.
                    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": touch}
                    touched = await on_second.post("/mcp", json=call, headers=headers)
                    assert touched.json()["result"]["structuredContent"] == {"result": 1}
                    assert await anext(messages) == UPDATED
                    await messages.aclose()


class _Notes(McpServer):
    """A 2026-07-28 upstream whose board `touch` announces; it records which URIs listen streams ask for (a
    stream's URIs are withdrawn when it ends)."""

    def __init__(self) -> None:
        super().__init__("notes")
        self.asked: list[tuple[str, str]] = []
        self.withdrawn = threading.Event()
        self.asked_again = threading.Event()

    async def subscribed(self, uri: str) -> None:
        self.asked.append(("subscribed", uri))
        if self.asked.count(("subscribed", uri)) >= 2:
            self.asked_again.set()

    async def unsubscribed(self, uri: str) -> None:
        self.asked.append(("unsubscribed", uri))
        self.withdrawn.set()


def _notes() -> _Notes:
    notes = _Notes()

    @notes.tool()
    async def touch(ctx: Context) -> str:
        """Tells subscribers the board changed."""
        await ctx.notify_resource_updated(sdk_upstream.BOARD)
        return "touched"

    @notes.resource(sdk_upstream.BOARD, mime_type="text/plain")
    def board() -> str:
        """The board."""
        return "the board"

    return notes


async def test_a_2026_upstreams_update_reaches_the_subscriber_on_another_container_until_it_unsubscribes() -> None:
    prefix = f"gw-subs-{secrets.token_hex(4)}"
    notes = _notes()
    with (
        uvicorn_serving(build_app(notes, Settings()), lifespan="on") as upstream,
        uvicorn_serving(_container(f"{upstream}/mcp", prefix, version=None), lifespan="on") as first,
        uvicorn_serving(_container(f"{upstream}/mcp", prefix, version=None), lifespan="on") as second,
    ):
        async with (
            httpx.AsyncClient(base_url=first, timeout=10) as on_first,
            httpx.AsyncClient(base_url=second, timeout=10) as on_second,
        ):
            session = await McpHttp(on_first).initialize()
            headers = {**BASE_HEADERS, **session.headers}
            subscribe = {"uri": sdk_upstream.BOARD}
            with anyio.fail_after(20):
                body = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": subscribe}
                answer = await on_first.post("/mcp", json=body, headers=headers)
                assert answer.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
                assert ("subscribed", sdk_upstream.BOARD) in notes.asked  # answered once the upstream listens
                async with on_second.stream("GET", "/mcp", headers=headers) as stream:
                    assert stream.status_code == 200
                    messages = _messages(stream)
                    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": _TOUCH}
                    touched = await on_second.post("/mcp", json=call, headers=headers)
                    assert touched.json()["result"]["content"] == [{"type": "text", "text": "touched"}]
                    assert await anext(messages) == UPDATED
                    await messages.aclose()
                body = {"jsonrpc": "2.0", "id": 4, "method": "resources/unsubscribe", "params": subscribe}
                answer = await on_first.post("/mcp", json=body, headers=headers)
                assert answer.json() == {"jsonrpc": "2.0", "id": 4, "result": {}}
                # The first container's listen stream is reopened without the URI, and the old one closed.
                assert await anyio.to_thread.run_sync(notes.withdrawn.wait, 10)
            assert notes.asked.count(("subscribed", sdk_upstream.BOARD)) == 1
            assert notes.asked.count(("unsubscribed", sdk_upstream.BOARD)) == 1


async def test_a_2026_clients_listen_filter_is_passed_to_a_2026_upstream_while_it_listens() -> None:
    notes = _notes()
    with (
        uvicorn_serving(build_app(notes, Settings()), lifespan="on") as upstream,
        uvicorn_serving(_container(f"{upstream}/mcp", f"gw-subs-{secrets.token_hex(4)}", None), lifespan="on") as url,
    ):
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            caller = McpHttp(http)
            notifications = {"resourceSubscriptions": [sdk_upstream.BOARD]}
            body = {
                "jsonrpc": "2.0",
                "id": "listen-1",
                "method": "subscriptions/listen",
                "params": {"_meta": stateless_meta(), "notifications": notifications},
            }
            listen_headers = {**BASE_HEADERS, "mcp-protocol-version": STATELESS, "mcp-method": "subscriptions/listen"}
            with anyio.fail_after(20):
                async with http.stream("POST", "/mcp", json=body, headers=listen_headers) as stream:
                    assert stream.status_code == 200
                    listened = _messages(stream)
                    acknowledged = await anext(listened)
                    assert acknowledged["params"]["notifications"] == notifications
                    assert ("subscribed", sdk_upstream.BOARD) in notes.asked
                    touched = await caller.stateless("tools/call", _TOUCH)
                    assert touched.json()["result"]["content"] == [{"type": "text", "text": "touched"}]
                    assert await anext(listened) == {
                        **UPDATED,
                        "params": {
                            "uri": sdk_upstream.BOARD,
                            "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"},
                        },
                    }
                    await listened.aclose()
                assert await anyio.to_thread.run_sync(notes.withdrawn.wait, 10)  # its listen ended: no longer asked
            assert notes.asked == [("subscribed", sdk_upstream.BOARD), ("unsubscribed", sdk_upstream.BOARD)]


async def test_a_listen_stream_the_2026_upstream_ends_is_reopened_with_the_same_uris() -> None:
    notes = _notes()
    with (
        uvicorn_serving(build_app(notes, Settings(max_stream_seconds=2.0)), lifespan="on") as upstream,
        uvicorn_serving(_container(f"{upstream}/mcp", f"gw-subs-{secrets.token_hex(4)}", None), lifespan="on") as url,
    ):
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            session = await McpHttp(http).initialize()
            headers = {**BASE_HEADERS, **session.headers}
            with anyio.fail_after(20):
                body = {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "resources/subscribe",
                    "params": {"uri": sdk_upstream.BOARD},
                }
                assert (await http.post("/mcp", json=body, headers=headers)).json()["result"] == {}
                # The upstream ends the gateway's listen after 2 s (its stream limit): the next one asks again.
                assert await anyio.to_thread.run_sync(notes.asked_again.wait, 10)
                async with http.stream("GET", "/mcp", headers=headers) as stream:
                    messages = _messages(stream)
                    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": _TOUCH}
                    assert (await http.post("/mcp", json=call, headers=headers)).status_code == 200
                    assert await anext(messages) == UPDATED
                    await messages.aclose()
            assert ("unsubscribed", sdk_upstream.BOARD) in notes.asked  # the ended stream's own withdrawal


_TOUCH = {"name": "mcp__notes__touch", "arguments": {}}


async def test_a_uri_no_upstream_owns_is_refused_and_left_out_of_a_listens_acknowledged_filter() -> None:
    notes = _notes()
    unknown = "note://nowhere"
    with (
        uvicorn_serving(build_app(notes, Settings()), lifespan="on") as upstream,
        uvicorn_serving(_container(f"{upstream}/mcp", f"gw-subs-{secrets.token_hex(4)}", None), lifespan="on") as url,
    ):
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            session = await McpHttp(http).initialize()
            with anyio.fail_after(20):
                refused = await session.request("resources/subscribe", {"uri": unknown})
                assert refused.json()["error"]["code"] == -32002
                assert refused.json()["error"]["data"] == {"uri": unknown}
                body = {
                    "jsonrpc": "2.0",
                    "id": "listen-2",
                    "method": "subscriptions/listen",
                    "params": {
                        "_meta": stateless_meta(),
                        "notifications": {"resourceSubscriptions": [unknown, sdk_upstream.BOARD]},
                    },
                }
                headers = {**BASE_HEADERS, "mcp-protocol-version": STATELESS, "mcp-method": "subscriptions/listen"}
                async with http.stream("POST", "/mcp", json=body, headers=headers) as stream:
                    listened = _messages(stream)
                    acknowledged = await anext(listened)
                    await listened.aclose()
    assert acknowledged["params"]["notifications"] == {"resourceSubscriptions": [sdk_upstream.BOARD]}
    assert ("subscribed", unknown) not in notes.asked
