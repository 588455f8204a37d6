"""The `stratus` command line.

    stratus --version
    stratus init DIR [--force]
    stratus serve [--app MODULE:ATTR | --gateway FILE] [--host HOST] [--port PORT] [--store URL]
    stratus local [--template FILE] [--parameter NAME=VALUE]... [--app MODULE:ATTR | --gateway FILE] [--store URL]
                  [--host HOST] [--port PORT] [--containers N] [--retire-rate P] [--seed N]
    stratus store create --store dynamodb://TABLE
    stratus gateway list | add NAME JSON | update NAME JSON | remove NAME | import FILE | test NAME [--store URL]

Flags override the matching `STRATUS_*` variables; the defaults serve the demo server on 127.0.0.1:8000 with the
in-memory store.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence

from stratus import build_app
from stratus.emulator import command as local_command
from stratus.handlers import gateway_admin, scaffold
from stratus.handlers.loading import load_served, registered
from stratus.handlers.secrets import settings_from_env
from stratus.server.server import McpServer
from stratus.settings import SettingsError
from stratus.transport.asgi import Router
from stratus.version import __version__

SHUTDOWN_GRACE_SECONDS = 5
"""How long `stratus serve` waits for open requests and streams when told to stop."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stratus", description="Serve MCP servers locally and on AWS Lambda.")
    parser.add_argument("--version", action="version", version=f"stratus {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a server locally under uvicorn")
    serve.add_argument("--app", help="the server as MODULE:ATTR (default: the demo server, or STRATUS_APP)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind (default: MCP_HTTP_PORT, else 8000)")
    serve.add_argument("--store", help="state store URL (default: memory://, or STRATUS_STORE)")
    serve.add_argument("--gateway", metavar="FILE", help='serve the upstreams of a {"mcpServers": ...} file as one')
    serve.add_argument(
        "--transport",
        choices=("http", "stdio"),
        help="http (uvicorn, the default) or stdio (for desktop hosts; default: MCP_TRANSPORT_TYPE)",
    )
    local_command.add_parser(commands)
    store = commands.add_parser("store", help="manage the state store")
    store_commands = store.add_subparsers(dest="store_command", required=True)
    create = store_commands.add_parser(
        "create", help="create the DynamoDB table (key schema and TTL) a store URL names"
    )
    create.add_argument("--store", required=True, help="dynamodb://TABLE")
    gateway_admin.add_parser(commands)
    scaffold.add_parser(commands)
    return parser


def _create_store(url: str) -> int:
    from stratus.stores.urls import StoreConfigError, parse_store_url

    try:
        store = parse_store_url(url)
    except StoreConfigError as exc:
        print(f"stratus: {exc}", file=sys.stderr)
        return 2
    if store.backend != "dynamodb":
        print(f"stratus: {store.scheme} needs no set-up; only dynamodb:// stores are created", file=sys.stderr)
        return 2
    from stratus.stores.dynamodb.client import dynamodb_client
    from stratus.stores.dynamodb.schema import create_table

    create_table(dynamodb_client(timeout=5.0), store.table)
    print(f"Created DynamoDB table {store.table} (PK/SK, on demand, TTL on 'expires')")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    args = _parser().parse_args(argv)
    # `--app mymodule:server` names a module of the project the command runs in, as uvicorn's `main:app` does.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    if args.command == "init":
        return scaffold.run(args)
    if args.command == "store":
        return _create_store(args.store)
    if args.command == "local":
        return local_command.run(args)
    if args.command == "gateway":
        try:
            # The records sign nothing: a shared store's required secret key is not needed to edit them.
            settings = settings_from_env(store=args.store, secret_key=os.environ.get("STRATUS_SECRET_KEY") or "-")
        except SettingsError as exc:
            print(f"stratus: {exc}", file=sys.stderr)
            return 2
        return gateway_admin.run(args, settings)
    try:
        settings = settings_from_env(app=args.app, store=args.store, gateway_config=args.gateway)
        server = load_served(settings)
    except (SettingsError, ValueError, ImportError, OSError) as exc:
        print(f"stratus: {exc}", file=sys.stderr)
        return 2
    app = build_app(server, settings)
    if (args.transport or os.environ.get("MCP_TRANSPORT_TYPE") or "http").lower() == "stdio":
        print(registered(server), file=sys.stderr)  # stdout carries MCP messages only
        return _serve_stdio(app, server, settings.mcp_path)
    from stratus.handlers.serving import serve

    args.port = serve_port(args.port, os.environ)
    print(f"Serving {server.name} at http://{args.host}:{args.port}{settings.mcp_path} (store {settings.store})")
    print(registered(server))
    # Open streams (a session's GET stream, a gateway watching this server) would hold a graceful shutdown forever;
    # after this long they are cut, and their clients resume elsewhere with Last-Event-ID.
    serve(app, settings, host=args.host, port=args.port, timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS)
    return 0


DEFAULT_PORT = 8000
"""Not the seed's 3000, which `stratus local`'s front doors (and most web dev servers) take."""


def serve_port(flag: int | None, environ: Mapping[str, str]) -> int:
    """The port `stratus serve` binds: `--port`, else the seed's `MCP_HTTP_PORT`, else 8000."""
    if flag is not None:
        return flag
    return int(environ.get("MCP_HTTP_PORT") or DEFAULT_PORT)


def _serve_stdio(app: Router, server: McpServer, path: str) -> int:
    """Serve over stdin and stdout until stdin closes; stdout carries MCP messages only (logs go to stderr)."""
    from stratus.handlers.stdio_server import serve_stdio

    async def run() -> None:
        try:
            await serve_stdio(app, server, path=path)
        finally:
            await app.shutdown()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
