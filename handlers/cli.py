"""The `stratus` command line.

    stratus --version
    stratus init DIR [--force]
    stratus serve [--app MODULE:ATTR | --gateway FILE] [--host HOST] [--port PORT] [--store URL] [--traces]
    stratus local [--template FILE] [--parameter NAME=VALUE]... [--app MODULE:ATTR | --gateway FILE] [--store URL]
                  [--host HOST] [--port PORT] [--containers N] [--retire-rate P] [--seed N]
    stratus store create --store dynamodb://TABLE
    stratus gateway list | add NAME JSON | update NAME JSON | remove NAME | import FILE | test NAME [--store URL]
    stratus check-deploy --stack NAME | --endpoint OUTPUT=URL... [--record FILE] [--expect FILE]

Flags override the matching `STRATUS_*` variables; the defaults serve on 127.0.0.1:8000 with the in-memory store,
and, in a checkout of Stratus, the demo server when no app is named.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from stratus import build_app
from stratus.emulator import command as local_command
from stratus.handlers import deploy_check, gateway_admin, scaffold
from stratus.handlers.loading import load_served, load_server, problem_lines, registered, store_problem
from stratus.handlers.secrets import settings_from_env
from stratus.server.server import McpServer
from stratus.settings import Settings, SettingsError
from stratus.transport.asgi import Router
from stratus.version import __version__

SHUTDOWN_GRACE_SECONDS = 5
"""How long `stratus serve` waits for open requests and streams when told to stop."""


RELOAD_HELP = "restart when a .py file under the current folder changes (for editing code while it runs)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stratus", description="Serve MCP servers locally and on AWS Lambda.")
    parser.add_argument("--version", action="version", version=f"stratus {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a server locally under uvicorn")
    serve.add_argument(
        "--app", help="the server as MODULE:ATTR (default: STRATUS_APP, else the demo server in a checkout of Stratus)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to bind (default: MCP_HTTP_PORT, else 8000)")
    serve.add_argument("--store", help="state store URL (default: memory://, or STRATUS_STORE)")
    serve.add_argument("--gateway", metavar="FILE", help='serve the upstreams of a {"mcpServers": ...} file as one')
    serve.add_argument(
        "--transport",
        choices=("http", "stdio"),
        help="http (uvicorn, the default) or stdio (for desktop hosts; default: MCP_TRANSPORT_TYPE)",
    )
    serve.add_argument("--reload", action="store_true", help=RELOAD_HELP)
    serve.add_argument(
        "--traces",
        action="store_true",
        help="print each request's spans as a waterfall (STRATUS_TRACING=console; the otel extra)",
    )
    local_command.add_parser(commands)
    commands.choices["local"].add_argument("--reload", action="store_true", help=RELOAD_HELP)
    store = commands.add_parser("store", help="manage the state store")
    store_commands = store.add_subparsers(dest="store_command", required=True)
    create = store_commands.add_parser(
        "create", help="create the DynamoDB table (key schema and TTL) a store URL names"
    )
    create.add_argument("--store", required=True, help="dynamodb://TABLE")
    gateway_admin.add_parser(commands)
    scaffold.add_parser(commands)
    deploy_check.add_parser(commands)
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
    from botocore.exceptions import BotoCoreError, ClientError

    from stratus.stores.dynamodb.client import dynamodb_client
    from stratus.stores.dynamodb.failures import diagnosis
    from stratus.stores.dynamodb.schema import create_table

    client = None
    try:
        client = dynamodb_client(timeout=5.0)
        create_table(client, store.table)
    except (BotoCoreError, ClientError) as error:
        print(f"stratus: cannot create the table: {diagnosis(error, client, store.table)}", file=sys.stderr)
        return 2
    print(f"Created DynamoDB table {store.table} (PK/SK, on demand, TTL on 'expires')")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit status."""
    args = _parser().parse_args(argv)
    if getattr(args, "reload", False):
        from stratus.handlers.reload import supervise

        return supervise(list(sys.argv[1:] if argv is None else argv), Path.cwd())
    # `--app mymodule:server` names a module of the project the command runs in, as uvicorn's `main:app` does.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    if args.command == "init":
        return scaffold.run(args)
    if args.command == "store":
        return _create_store(args.store)
    if args.command == "check-deploy":
        return deploy_check.run(args)
    if args.command == "local":
        return local_command.run(args)
    if args.command == "gateway":
        try:
            # The records sign nothing: a shared store's required secret key is not needed to edit them.
            settings = settings_from_env(store=args.store, secret_key=secrets.token_hex(32))
        except SettingsError as exc:
            print(f"stratus: {exc}", file=sys.stderr)
            return 2
        return gateway_admin.run(args, settings)
    stdio = (args.transport or os.environ.get("MCP_TRANSPORT_TYPE") or "http").lower() == "stdio"
    problems, port = serve_port(args.port, os.environ) if not stdio else ([], 0)
    server: McpServer | None = None
    try:
        traces = "console" if args.traces else None
        settings = settings_from_env(app=args.app, store=args.store, gateway_config=args.gateway, tracing=traces)
    except SettingsError as exc:
        gateway = args.gateway or os.environ.get("STRATUS_GATEWAY_CONFIG")
        app_problems = [] if gateway else _app_problems(args.app or os.environ.get("STRATUS_APP"))
        problems = [*exc.problems, *app_problems, *problems]
    else:
        server, found = _load(settings)
        problems = [*found, *problems]
    if problems or server is None:  # every problem at once, one line each
        for problem in problems:
            print(f"stratus: {problem}", file=sys.stderr)
        return 2
    app = build_app(server, settings)
    if stdio:
        print(registered(server), file=sys.stderr)  # stdout carries MCP messages only
        return _serve_stdio(app, server, settings.mcp_path)
    from stratus.handlers.serving import serve

    print(f"Serving {server.name} at http://{args.host}:{port}{settings.mcp_path} (store {settings.store})")
    print(registered(server))
    # Open streams (a session's GET stream, a gateway watching this server) would hold a graceful shutdown forever;
    # after this long they are cut, and their clients resume elsewhere with Last-Event-ID.
    serve(app, settings, host=args.host, port=port, timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS)
    return 0


DEFAULT_PORT = 8000
"""Not the seed's 3000, which `stratus local`'s front doors (and most web dev servers) take."""


def serve_port(flag: int | None, environ: Mapping[str, str]) -> tuple[list[str], int]:
    """The port `stratus serve` binds (`--port`, else the seed's `MCP_HTTP_PORT`, else 8000), and what is wrong
    with the one given (one line naming where it came from), if anything."""
    if flag is not None:
        source, text = "--port", str(flag)
    elif environ.get("MCP_HTTP_PORT"):
        source, text = "MCP_HTTP_PORT", environ["MCP_HTTP_PORT"]
    else:
        return [], DEFAULT_PORT
    if not text.strip().isdigit() or not 0 < int(text) < 65536:
        return [f"{source}={text!r}: must be a port number from 1 to 65535, e.g. {DEFAULT_PORT}"], DEFAULT_PORT
    return [], int(text)


def _app_problems(reference: str | None) -> list[str]:
    """Why the app `reference` names cannot be served, when the other settings failed: told with them."""
    if not reference or ":" not in reference:
        return []  # the demo server, or a malformed reference the settings already name
    try:
        load_server(reference)
    except (ValueError, ImportError) as exc:
        return [str(exc)]
    return []


def _load(settings: Settings) -> tuple[McpServer | None, list[str]]:
    """The server `settings` name, and what stops it from serving, one line each: the app cannot be loaded, the
    store does not answer."""
    problems: list[str] = []
    server: McpServer | None = None
    try:
        server = load_served(settings)
    except (ValueError, ImportError, OSError) as exc:
        problems.extend(problem_lines(exc))
    if (unreachable := asyncio.run(store_problem(settings))) is not None:
        problems.append(unreachable)
    return server, problems


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
