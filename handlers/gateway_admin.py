"""`stratus gateway ...`: the upstreams a gateway serves, recorded in the shared store (STRATUS_STORE or --store).

    stratus gateway list
    stratus gateway add NAME '{"url": "https://api.example.com/mcp"}'
    stratus gateway update NAME '{"url": "https://api2.example.com/mcp", "namespaced": false}'
    stratus gateway remove NAME
    stratus gateway import servers.json          # every server of a {"mcpServers": {...}} file, all or none
    stratus gateway test NAME                    # connect, list its tools, disconnect

Every gateway sharing the store serves the change within its catalog refresh (5 s). Problems are printed one per
line, naming server and field, with exit status 2. `test` connects under the address guard `stratus serve
--gateway` uses (STRATUS_GATEWAY_ALLOWED_NETWORKS), so an upstream it reaches is one a gateway may serve.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
from pathlib import Path

from stratus.composition import stores_for
from stratus.config import Settings
from stratus.gateway.config import GatewayConfigError
from stratus.gateway.registry import RegistryBusyError, UpstreamRecord, UpstreamRegistry


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gateway = commands.add_parser("gateway", help="the upstreams recorded in the store for gateways to serve")
    gateway.add_argument("--store", help="state store URL (default: STRATUS_STORE)")
    actions = gateway.add_subparsers(dest="gateway_command", required=True)
    actions.add_parser("list", help="the recorded upstreams")
    for action in ("add", "update"):
        parser = actions.add_parser(action, help=f"{action} one upstream")
        parser.add_argument("name")
        parser.add_argument("entry", help='its configuration entry as JSON, e.g. {"url": "https://..."}')
    actions.add_parser("remove", help="forget one upstream").add_argument("name")
    actions.add_parser("import", help="record every server of an mcpServers file").add_argument("file")
    actions.add_parser("test", help="connect to a recorded upstream and list its tools").add_argument("name")


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Carry out one `stratus gateway` command; returns the exit status."""
    try:
        document = Path(args.file).read_text(encoding="utf-8") if args.gateway_command == "import" else ""
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
            print(_describe(await registry.add(args.name, _entry(args.entry))))
        elif command == "update":
            print(_describe(await registry.update(args.name, _entry(args.entry))))
        elif command == "remove":
            await registry.remove(args.name)
            print(f"removed {args.name}")
        elif command == "import":
            for record in await registry.add_many(document):
                print(_describe(record))
        else:
            return await _test(registry, args.name, settings)
        return 0
    finally:
        await stores.aclose()


async def _test(registry: UpstreamRegistry, name: str, settings: Settings) -> int:
    from stratus.gateway.addresses import AddressGuard, parse_allowed_networks
    from stratus.gateway.operations import check_connection

    record = next((each for each in (await registry.snapshot()).records if each.upstream.name == name), None)
    if record is None:
        raise GatewayConfigError([f"{name}: no such upstream"])
    guard = AddressGuard(parse_allowed_networks(",".join(settings.gateway_allowed_networks)))
    result = await check_connection(record.upstream, guard=guard)
    if not result.ok:
        print(f"{name}: {result.error}", file=sys.stderr)
        return 1
    print(f"{name}: {len(result.tools)} tools: {', '.join(result.tools)}")
    return 0


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
