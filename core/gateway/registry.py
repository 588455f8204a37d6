"""Upstreams kept as records in the shared store, so an operator can add, change and remove them while every
container serves the same set.

The records are one document in the `CacheStore` (`gateway:registry`): the `mcpServers` entries as given, each
with its created and updated times, and a version that changes with every write. Writers take a short lock
(`claim`), read, change and write the document, so two containers editing at once never lose an edit; every
change is validated as a whole (a new entry must not clash with the others' names or namespaces), and problems
are reported all at once, naming server and field. Gateways re-read the version when they rebuild their catalog
and reconnect whatever changed.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

from stratus.gateway.config import GatewayConfigError, Upstream, parse_document, parse_servers
from stratus.stores.base import CacheStore
from stratus.types import JsonObject

KEY = "gateway:registry"
LOCK = "gateway:registry:lock"
LOCK_SECONDS = 10.0
LOCK_WAIT_SECONDS = 3.0
KEEP_SECONDS = 10 * 365 * 24 * 3600.0
"""Records are kept until removed; the store wants a time to live, so they get ten years."""


def new_id(now: float) -> str:
    """A record id as the client connection pool makes them: `mcp_{milliseconds since the epoch}_{random}`."""
    return f"mcp_{int(now * 1000)}_{secrets.token_hex(4)}"


class RegistryBusyError(Exception):
    """Another writer held the registry for longer than a writer waits."""


@dataclass(frozen=True, slots=True)
class UpstreamRecord:
    """One upstream as recorded: its configuration entry, what it parses to, and when it was added and changed."""

    upstream: Upstream
    entry: JsonObject
    created: float
    updated: float


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The registry at one version."""

    version: int
    records: tuple[UpstreamRecord, ...]

    @property
    def upstreams(self) -> list[Upstream]:
        return [record.upstream for record in self.records]


class UpstreamRegistry:
    """The upstream records in a store; `reserved` names (the configuration file's) cannot be recorded."""

    def __init__(
        self, store: CacheStore, *, reserved: Collection[str] = (), clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.reserved = frozenset(reserved)
        self.clock = clock

    async def snapshot(self) -> Snapshot:
        """Every record, in the order they were added."""
        document = await self._read()
        servers, times = document["mcpServers"], document["times"]
        upstreams = parse_servers({"mcpServers": servers}) if servers else []
        records = tuple(
            UpstreamRecord(upstream, servers[upstream.name], *times[upstream.name]) for upstream in upstreams
        )
        return Snapshot(int(document["version"]), records)

    async def add(self, name: str, entry: JsonObject) -> UpstreamRecord:
        """Record a new upstream.

        Raises:
            GatewayConfigError: the name is taken, or the entry is invalid or clashes with another.
        """
        return (await self.add_many({name: entry}))[0]

    async def add_many(self, servers: JsonObject | str) -> list[UpstreamRecord]:
        """Record every upstream of a `{"mcpServers": {...}}` document (or its JSON text): all of them, or none.

        Raises:
            GatewayConfigError: any name is taken, or any entry is invalid (every problem listed).
        """
        if isinstance(servers, str):
            parse_document(servers)  # repeated names and invalid JSON are reported as such
            servers = json.loads(servers)
        if isinstance(servers, dict) and isinstance(servers.get("mcpServers"), dict):
            servers = servers["mcpServers"]
        if not isinstance(servers, dict) or not servers:
            raise GatewayConfigError(['expected {"mcpServers": {NAME: {...}}} with at least one server'])

        def change(document: JsonObject, now: float) -> list[str]:
            taken = [
                f"{name}: already configured"
                for name in servers
                if name in document["mcpServers"] or name in self.reserved
            ]
            if taken:
                raise GatewayConfigError(taken)
            for name, entry in servers.items():
                fresh = isinstance(entry, dict) and "id" not in entry
                document["mcpServers"][name] = {**entry, "id": new_id(now)} if fresh else entry
                document["times"][name] = [now, now]
            return list(servers)

        names, snapshot = await self._write(change)
        return [record for record in snapshot.records if record.upstream.name in names]

    async def update(self, name: str, entry: JsonObject, *, replace: bool = False) -> UpstreamRecord:
        """Merge `entry` into an upstream's record: its fields replace the recorded ones, a field given as null is
        removed, the others are kept; with `replace`, `entry` is the whole new record. Its `id` and created time
        are kept either way; gateways reconnect it if how to reach it changed.

        Raises:
            GatewayConfigError: no such upstream, an attempt to change its `id`, or the result is invalid.
        """

        def change(document: JsonObject, now: float) -> list[str]:
            if name not in document["mcpServers"]:
                raise GatewayConfigError([f"{name}: no such upstream"])
            old: JsonObject = document["mcpServers"][name]
            if "id" in entry and "id" in old and entry["id"] != old["id"]:
                raise GatewayConfigError([f"{name}.id: a record's id cannot be changed"])
            merged = dict(entry) if replace else {**old, **entry}
            merged = {key: value for key, value in merged.items() if value is not None}
            if "id" in old:
                merged["id"] = old["id"]
            document["mcpServers"][name] = merged
            document["times"][name] = [document["times"][name][0], now]
            return [name]

        _, snapshot = await self._write(change)
        return next(record for record in snapshot.records if record.upstream.name == name)

    async def remove(self, name: str) -> None:
        """Forget an upstream; gateways disconnect it.

        Raises:
            GatewayConfigError: no such upstream.
        """

        def change(document: JsonObject, now: float) -> list[str]:
            if name not in document["mcpServers"]:
                raise GatewayConfigError([f"{name}: no such upstream"])
            del document["mcpServers"][name]
            del document["times"][name]
            return []

        await self._write(change)

    async def _read(self) -> JsonObject:
        raw = await self.store.get(KEY)
        document: JsonObject = json.loads(raw) if raw else {}
        document.setdefault("mcpServers", {})
        document.setdefault("times", {})
        document.setdefault("version", 0)
        return document

    async def _write(self, change: Callable[[JsonObject, float], list[str]]) -> tuple[list[str], Snapshot]:
        await self._lock()
        try:
            document = await self._read()
            changed = change(document, self.clock())
            parse_servers({"mcpServers": document["mcpServers"]})  # the whole set must still be valid
            document["version"] += 1
            await self.store.set(KEY, json.dumps(document, separators=(",", ":")), KEEP_SECONDS)
        finally:
            await self.store.delete(LOCK)
        return changed, await self.snapshot()

    async def _lock(self) -> None:
        loop = asyncio.get_running_loop()
        give_up = loop.time() + LOCK_WAIT_SECONDS
        delay = 0.005
        while not await self.store.claim(LOCK, LOCK_SECONDS):
            if loop.time() > give_up:
                raise RegistryBusyError(f"the gateway registry stayed locked for {LOCK_WAIT_SECONDS:g} s")
            await asyncio.sleep(delay)  # another container is writing: a few milliseconds
            delay = min(delay * 2, 0.1)
