"""Upstream records in the shared store (memory and the real Redis): add, update, remove and add-many with clear
errors, times kept, edits from two containers at once both kept; and a served gateway following the records."""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest
from mcp import Client

from stratus import Settings, build_app
from stratus.gateway.config import GatewayConfigError
from stratus.gateway.registry import UpstreamRegistry
from stratus.gateway.served import GatewayServer
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.factory import build_stores
from tests.fixtures.clocks import FakeClock
from tests.fixtures.sample_server import server as sample
from tests.fixtures.servers import uvicorn_serving

pytestmark = pytest.mark.anyio
SEARCH = {"url": "https://search.example.com/mcp"}


@pytest.fixture(params=["memory://", "redis://127.0.0.1:6379/0"])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[Stores]:
    built = build_stores(request.param, StoreOptions(session_ttl_seconds=600, prefix=f"reg-{secrets.token_hex(4)}"))
    yield built
    await built.aclose()


async def test_an_added_upstream_is_recorded_with_its_times_and_a_second_add_is_refused(stores: Stores) -> None:
    clock = FakeClock()
    registry = UpstreamRegistry(stores.cache, clock=clock)
    added = await registry.add("search", SEARCH)
    assert (added.upstream.name, added.upstream.url, added.created, added.updated) == (
        "search",
        SEARCH["url"],
        clock.now,
        clock.now,
    )
    with pytest.raises(GatewayConfigError) as taken:
        await registry.add("search", {"url": "https://other.example.com/mcp"})
    assert taken.value.problems == ["search: already configured"]
    snapshot = await UpstreamRegistry(stores.cache).snapshot()  # another container sees the same
    assert [record.entry for record in snapshot.records] == [{**SEARCH, "id": added.upstream.id}]


async def test_a_record_gets_the_pools_id_and_keeps_the_seeds_fields(stores: Stores) -> None:
    clock = FakeClock()
    registry = UpstreamRegistry(stores.cache, clock=clock)
    fields = {"isTrusted": True, "installSource": "protocol", "scope": "local", "projectPath": "/src/app"}
    added = await registry.add("search", {**SEARCH, **fields})
    upstream = added.upstream
    assert re.fullmatch(rf"mcp_{int(clock.now * 1000)}_[0-9a-f]{{8}}", upstream.id or "")
    assert (upstream.trusted, upstream.install_source, upstream.scope, upstream.project_path) == (
        True,
        "protocol",
        "local",
        "/src/app",
    )
    given = await registry.add("files", {"command": "files-server", "id": "mcp_1700000000000_abc"})
    assert (given.upstream.id, given.upstream.trusted, given.upstream.install_source) == (
        "mcp_1700000000000_abc",
        False,
        "manual",
    )
    with pytest.raises(GatewayConfigError) as bad:
        await registry.add("odd", {**SEARCH, "isTrusted": "yes", "installSource": "store", "projectPath": 1})
    assert bad.value.problems == [
        "odd.projectPath: expected a string",
        "odd.installSource: expected one of builtin, manual, protocol, unknown",
        "odd.isTrusted: expected true or false",
    ]
    with pytest.raises(GatewayConfigError) as renamed:
        await registry.update("search", {"id": "mcp_1_x"})
    assert renamed.value.problems == ["search.id: a record's id cannot be changed"]
    replaced = await registry.update("search", {"url": "https://other.example.com/mcp"}, replace=True)
    assert (replaced.upstream.id, replaced.upstream.trusted) == (upstream.id, False)


async def test_an_update_merges_into_the_record_and_null_removes_a_field(stores: Stores) -> None:
    registry = UpstreamRegistry(stores.cache)
    await registry.add("search", {**SEARCH, "headers": {"x-team": "a"}, "disabledTools": ["drop"]})
    merged = await registry.update("search", {"namespaced": False, "disabledTools": None})
    assert (merged.upstream.url, merged.upstream.headers, merged.upstream.namespaced) == (
        SEARCH["url"],
        {"x-team": "a"},
        False,
    )
    assert merged.upstream.disabled_tools == frozenset()
    moved = await registry.update("search", {"url": None, "command": "search-server"})
    assert (moved.upstream.transport, moved.upstream.url, moved.upstream.namespaced) == ("stdio", None, False)


async def test_bad_entries_are_refused_with_every_problem_named_and_nothing_written(stores: Stores) -> None:
    registry = UpstreamRegistry(stores.cache)
    with pytest.raises(GatewayConfigError) as bad:
        await registry.add_many(
            {"mcpServers": {"ok": SEARCH, "broken": {"url": "ftp://x"}, "odd": {"command": "x", "colour": "red"}}}
        )
    assert bad.value.problems == [
        "broken.url: expected an http(s) URL with a host",
        "odd.colour: unknown field",
    ]
    assert (await registry.snapshot()).records == ()  # all or nothing: "ok" was not added either
    with pytest.raises(GatewayConfigError) as repeated:
        await registry.add_many(
            '{"mcpServers": {"a": {"url": "https://a.example"}, "a": {"url": "https://b.example"}}}'
        )
    assert repeated.value.problems == ["a: defined more than once"]


async def test_an_update_keeps_the_created_time_and_a_remove_forgets_the_upstream(stores: Stores) -> None:
    clock = FakeClock()
    registry = UpstreamRegistry(stores.cache, clock=clock)
    created = (await registry.add("search", SEARCH)).created
    clock.advance(60)
    updated = await registry.update("search", {"url": "https://search2.example.com/mcp", "namespaced": False})
    assert (updated.created, updated.updated) == (created, created + 60)
    assert (updated.upstream.url, updated.upstream.namespaced) == ("https://search2.example.com/mcp", False)
    await registry.remove("search")
    assert (await registry.snapshot()).records == ()
    for change in (registry.update("search", SEARCH), registry.remove("search")):
        with pytest.raises(GatewayConfigError) as unknown:
            await change
        assert unknown.value.problems == ["search: no such upstream"]


async def test_a_configured_name_cannot_be_recorded_too(stores: Stores) -> None:
    with pytest.raises(GatewayConfigError) as taken:
        await UpstreamRegistry(stores.cache, reserved={"search"}).add("search", SEARCH)
    assert taken.value.problems == ["search: already configured"]


async def test_two_containers_adding_at_once_both_keep_their_upstream(stores: Stores) -> None:
    one, other = UpstreamRegistry(stores.cache), UpstreamRegistry(stores.cache)
    names = [f"server-{index}" for index in range(10)]
    await asyncio.gather(*((one if index % 2 else other).add(name, SEARCH) for index, name in enumerate(names)))
    snapshot = await one.snapshot()
    assert sorted(record.upstream.name for record in snapshot.records) == names
    assert snapshot.version == 10


@pytest.fixture(scope="module")
def sample_urls() -> Iterator[tuple[str, str]]:
    with (
        uvicorn_serving(build_app(sample, Settings())) as first,
        uvicorn_serving(build_app(sample, Settings())) as second,
    ):
        yield f"{first}/mcp", f"{second}/mcp"


@pytest.mark.uvicorn
async def test_a_gateway_serves_what_is_recorded_and_follows_changes(sample_urls: tuple[str, str]) -> None:
    stores = build_stores("memory://", StoreOptions(session_ttl_seconds=600))
    gateway = GatewayServer([], allowed_networks=["127.0.0.0/8"], catalog_seconds=0.0)
    events: list[tuple[str, dict[str, object]]] = []
    gateway.listeners.append(lambda event, fields: events.append((event, fields)))
    registry = UpstreamRegistry(stores.cache)
    app = build_app(gateway, Settings(), stores=stores)
    with uvicorn_serving(app, lifespan="on") as url, anyio.fail_after(20):
        async with Client(f"{url}/mcp", mode="legacy") as client:
            assert (await client.list_tools()).tools == []
            await registry.add("recorded", {"url": sample_urls[0]})
            listed = [tool.name for tool in (await client.list_tools()).tools]
            added = await client.call_tool("mcp__recorded__add", {"a": 1, "b": 2})
            await registry.update("recorded", {"url": sample_urls[1], "namespaced": False})
            renamed = [tool.name for tool in (await client.list_tools()).tools]
            await registry.remove("recorded")
            removed = (await client.list_tools()).tools
    assert listed == ["mcp__recorded__add", "mcp__recorded__forecast", "mcp__recorded__divide"]
    assert added.structured_content == {"result": 3}
    assert renamed == ["add", "forecast", "divide"]
    assert removed == []
    moves = [(fields["from"], fields["to"]) for event, fields in events if event == "connection:state"]
    assert moves == [
        ("disconnected", "connecting"),
        ("connecting", "connected"),
        ("connected", "disconnected"),  # the changed entry: its old connection is closed ...
        ("disconnected", "connecting"),  # ... and the new one made
        ("connecting", "connected"),
        ("connected", "disconnected"),  # removed
    ]
    assert [event for event, _ in events].count("servers:changed") >= 3
    connected = [fields for event, fields in events if event == "server:connected"]
    assert connected == [{"upstream": "recorded"}, {"upstream": "recorded"}]  # the seed's name for the event
