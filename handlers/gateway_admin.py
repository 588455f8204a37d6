"""`stratus gateway ...`: the upstreams a gateway serves, recorded in the shared store (STRATUS_STORE or --store).

    stratus gateway list
    stratus gateway add NAME '{"url": "https://api.example.com/mcp"}'    # recorded, then connected once
    stratus gateway update NAME '{"namespaced": false}'                    # merged into the record
    stratus gateway update --replace NAME '{"url": "https://api2.example.com/mcp"}'   # the whole new record
    stratus gateway remove NAME
    stratus gateway import servers.json          # every server of a {"mcpServers": {...}} file, all or none
    stratus gateway test NAME                    # connect, list its tools, disconnect
    stratus gateway discover NAME                # connect, list its tools, prompts, resources and templates

Every gateway sharing the store serves the change within its catalog refresh (5 s). Problems are printed one per
line, naming server and field, with exit status 2. `add` and `import` record first, then try each active
upstream once and print the outcome: a failure to connect is shown but the record is kept (exit status 0).
`test` and `discover` find NAME in the configuration file (STRATUS_GATEWAY_CONFIG) first, then in the store;
they fail with exit status 1 when it does not answer. Every connection is made under the address guard `stratus
serve --gateway` uses (STRATUS_GATEWAY_ALLOWED_NETWORKS) with the secrets its entry names resolved, so an
upstream they reach is one a gateway may serve.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from stratus.composition import stores_for
from stratus.gateway.config import GatewayConfigError, Upstream, parse_document
from stratus.gateway.registry import RegistryBusyError, UpstreamRecord, UpstreamRegistry
from stratus.settings import Settings

if TYPE_CHECKING:
    from stratus.net.addresses import AddressGuard

CONNECT_SECONDS = 10.0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gateway = commands.add_parser("gateway", help="the upstreams recorded in the store for gateways to serve")
    gateway.add_argument("--store", help="state store URL (default: STRATUS_STORE)")
    actions = gateway.add_subparsers(dest="gateway_command", required=True)
    actions.add_parser("list", help="the recorded upstreams")
    for action, summary in (("add", "record one upstream and connect to it"), ("update", "change one upstream")):
        parser = actions.add_parser(action, help=summary)
        parser.add_argument("name")
        parser.add_argument("entry", help='its configuration entry as JSON, e.g. {"url": "https://..."}')
        if action == "update":
            parser.add_argument(
                "--replace", action="store_true", help="the entry is the whole new record (default: merged in)"
            )
    actions.add_parser("remove", help="forget one upstream").add_argument("name")
    actions.add_parser("import", help="record every server of an mcpServers file").add_argument("file")
    actions.add_parser("test", help="connect to an upstream and list its tools").add_argument("name")
    actions.add_parser("discover", help="connect to an upstream and list everything it offers").add_argument("name")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Carry out one `stratus gateway` command; returns the exit status."""
    try:
        command = args.gateway_command
        document = Path(args.file).read_text(encoding="utf-8") if command == "import" else ""
        if command in ("test", "discover") and settings.gateway_config is not None:
            document = Path(settings.gateway_config).read_text(encoding="utf-8")  # its upstreams come first
        return asyncio.run(_run(args, settings, document))
    except (GatewayConfigError, RegistryBusyError, OSError, ValueError) as error:
        problems = error.problems if isinstance(error, GatewayConfigError) else [str(error)]
        for problem in problems:
            print(f"stratus: {problem}", file=sys.stderr)
        return 2


async def _run(args: argparse.Namespace, settings: Settings, document: str) -> int:
    stores = stores_for(settings)
    try:
        registry = UpstreamRegistry(stores.cache)
        command = args.gateway_command
        if command == "list":
            for record in (await registry.snapshot()).records:
                print(_describe(record))
        elif command == "add":
            record = await registry.add(args.name, _entry(args.entry))
            print(_describe(record))
            await _connect_once([record.upstream], settings)
        elif command == "update":
            print(_describe(await registry.update(args.name, _entry(args.entry), replace=args.replace)))
        elif command == "remove":
            await registry.remove(args.name)
            print(f"removed {args.name}")
        elif command == "import":
            records = await registry.add_many(document)
            for record in records:
                print(_describe(record))
            await _connect_once([record.upstream for record in records], settings)
        elif command == "test":
            return await _test(await _find(registry, args.name, document), settings)
        else:
            return await _discover(await _find(registry, args.name, document), settings)
        return 0
    finally:
        await stores.aclose()


async def _find(registry: UpstreamRegistry, name: str, configuration: str) -> Upstream:
    """The upstream NAME: the configuration file's (as a gateway serves it first), else the store's record."""
    if configuration:
        configured = parse_document(configuration)
        found = next((upstream for upstream in configured if upstream.name == name), None)
        if found is not None:
            return found
    record = next((each for each in (await registry.snapshot()).records if each.upstream.name == name), None)
    if record is None:
        raise GatewayConfigError([f"{name}: no such upstream"])
    return record.upstream


async def _connect_once(upstreams: list[Upstream], settings: Settings) -> None:
    """Try each active upstream once, as the seed's `add` does: the outcome is shown, the record kept either way."""
    for upstream in upstreams:
        if upstream.active:
            await _test(upstream, settings)


async def _test(upstream: Upstream, settings: Settings) -> int:
    from stratus.gateway.operations import check_connection

    result = await check_connection(_resolved(upstream), guard=_guard(settings), within=CONNECT_SECONDS)
    if not result.ok:
        print(f"{upstream.name}: not connected: {result.error}", file=sys.stderr)
        return 1
    print(f"{upstream.name}: connected, {len(result.tools)} tools: {', '.join(result.tools)}")
    return 0


async def _discover(upstream: Upstream, settings: Settings) -> int:
    from stratus.gateway.operations import discover
    from stratus.gateway.upstream_client import UpstreamClient, UpstreamError, UpstreamUnavailableError

    client = UpstreamClient(_resolved(upstream), timeout=CONNECT_SECONDS, guard=_guard(settings))
    try:
        await client.connect()
        found = await discover(client)
    except (UpstreamError, UpstreamUnavailableError) as error:
        print(f"{upstream.name}: not connected: {error}", file=sys.stderr)
        return 1
    finally:
        await client.close()
    print(f"{upstream.name}: protocol {found.version}")
    for kind, items in found.lists().items():
        names = [str(item.get("uri") or item.get("uriTemplate") or item.get("name")) for item in items]
        print(f"{kind} ({len(names)}): {', '.join(names)}" if kind not in found.failures else f"{kind}: -")
    for kind, reason in found.failures.items():
        print(f"{upstream.name}: {kind} could not be listed: {reason}", file=sys.stderr)
    return 0


def _guard(settings: Settings) -> AddressGuard:
    from stratus.net.addresses import AddressGuard, parse_allowed_networks

    return AddressGuard(parse_allowed_networks(",".join(settings.gateway_allowed_networks)))


def _resolved(upstream: Upstream) -> Upstream:
    """The upstream with the secrets its headers and env name resolved, as the gateway connects it.

    Raises:
        ValueError: a secret cannot be read (a SettingsError naming it).
    """
    import dataclasses

    from stratus.handlers.secrets import resolve_reference

    return dataclasses.replace(
        upstream,
        headers={name: resolve_reference(value) for name, value in upstream.headers.items()},
        env={name: resolve_reference(value) for name, value in upstream.env.items()},
    )


def _entry(text: str) -> dict[str, object]:
    try:
        entry = json.loads(text)
    except ValueError:
        raise GatewayConfigError(["the entry is not valid JSON"]) from None
    if not isinstance(entry, dict):
        raise GatewayConfigError(["the entry must be a JSON object"])
    return entry


def _describe(record: UpstreamRecord) -> str:
    upstream = record.upstream
    where = upstream.url or " ".join([upstream.command or "", *upstream.args])
    updated = datetime.datetime.fromtimestamp(record.updated, datetime.UTC).isoformat(timespec="seconds")
    return f"{upstream.name}\t{upstream.transport}\t{where}\t{'active' if upstream.active else 'inactive'}\t{updated}"
