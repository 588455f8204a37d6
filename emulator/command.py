"""`stratus local`: serve the stack a SAM template describes, every front door on its own port.

Only argparse (and the emulator's SSM throughput constant, whose module imports only `time`) is imported here; the
translator, httpx and the emulator itself are imported when the command runs, so `stratus serve` and the other
commands start as light as before.
"""

from __future__ import annotations

import argparse
import importlib
import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from stratus.emulator.throughput import SSM_STANDARD_TPS

if TYPE_CHECKING:
    from stratus.emulator.local_aws import Served
    from stratus.emulator.stack import Stack

DEFAULT_PORT = 3000  # as `sam local start-api`
DEFAULT_CONTAINERS = 2
DEFAULT_RETIRE_RATE = 0.02
LOCAL_PACKAGES = {
    "httpx": "httpx",
    "yaml": "pyyaml",
    "samtranslator": "aws-sam-translator",
    "boto3": "boto3",
    "moto": "moto",
}
"""What the `[local]` extra brings: the module imported -> the package that provides it."""


def missing_package() -> str | None:
    """The first package of the `[local]` extra that cannot be imported, or None when every one can."""
    return next((package for module, package in LOCAL_PACKAGES.items() if not _importable(module)), None)


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _parameter(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def _rate(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("a rate between 0 and 1")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("at least 1")
    return value


def _rate_per_second(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("0 (unlimited) or more calls a second")
    return value


def add_parser(commands: Any) -> None:
    local = commands.add_parser(
        "local",
        help="serve the stack template.yaml describes (its APIs, Function URLs and Lambda containers) on 127.0.0.1",
    )
    local.add_argument("--template", default="template.yaml", help="the SAM template (default: ./template.yaml)")
    local.add_argument(
        "--parameter",
        action="append",
        type=_parameter,
        default=[],
        metavar="NAME=VALUE",
        help="a template parameter override (repeatable)",
    )
    local.add_argument("--app", help="the server as MODULE:ATTR (default: STRATUS_APP, else the template's ServerApp)")
    local.add_argument("--gateway", metavar="FILE", help='serve the upstreams of a {"mcpServers": ...} file as one')
    local.add_argument(
        "--store",
        help="state store URL shared by every container (default: STRATUS_STORE, else an embedded DynamoDB, as the "
        "deployed stack's table)",
    )
    local.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    local.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"the first front door's port, the others following it (default: {DEFAULT_PORT})",
    )
    local.add_argument(
        "--containers",
        type=_positive,
        default=DEFAULT_CONTAINERS,
        help=f"most containers per function at once (default: {DEFAULT_CONTAINERS})",
    )
    local.add_argument(
        "--retire-rate",
        type=_rate,
        default=DEFAULT_RETIRE_RATE,
        help=f"chance a container is retired after an invocation (default: {DEFAULT_RETIRE_RATE})",
    )
    local.add_argument("--seed", type=int, help="seed of the container choices and retirements (default: random)")
    local.add_argument(
        "--throttle",
        action="store_true",
        help="answer 429 at once when a function's containers are all busy, as Lambda does past its concurrency "
        "(default: wait for one)",
    )
    local.add_argument(
        "--remap-www-authenticate",
        action="store_true",
        help="the Function URLs and HTTP APIs answer WWW-Authenticate as x-amzn-Remapped-WWW-Authenticate, as the "
        "REST APIs always do (reported on AWS, not documented; default: passed through)",
    )
    local.add_argument(
        "--deliver-events-twice",
        action="store_true",
        help="deliver every asynchronous invocation twice, as Lambda's event queue may (a task launch runs once)",
    )
    local.add_argument(
        "--ssm-tps",
        type=_rate_per_second,
        default=SSM_STANDARD_TPS,
        metavar="N",
        help=f"SSM reads a second before the emulated SSM answers ThrottlingException, as Parameter Store's standard "
        f"throughput does (default: {SSM_STANDARD_TPS:g}; 0: unlimited)",
    )
    local.add_argument(
        "--traces",
        action="store_true",
        help="trace every request (STRATUS_TRACING=otlp in each container) and show its spans across functions as "
        "they arrive at the emulator's own OTLP receiver (needs the otel extra)",
    )
    local.add_argument(
        "--sign-in",
        action="store_true",
        help="serve the authorization front (AuthMode=front) with a local OpenID provider that signs in any username, "
        "installed with npm on first use (docs/deploy.md, 'Sign-in locally')",
    )
    local.add_argument(
        "--no-iam",
        action="store_true",
        help="give the containers your own AWS credentials, their calls unchecked (to reach real AWS services); "
        "default: each runs with its function's execution role, its DynamoDB, SSM and Invoke calls checked",
    )


def mcp_path(stack: Stack, overrides: dict[str, str]) -> str:
    """The MCP endpoint's path the containers serve: the local `STRATUS_MCP_PATH`, else the template's, else /mcp."""
    if "STRATUS_MCP_PATH" in overrides:
        return overrides["STRATUS_MCP_PATH"]
    paths = (function.environment.get("STRATUS_MCP_PATH") for function in stack.functions.values())
    return next((path for path in paths if path), "/mcp")


def door_lines(served: list[Served], path: str) -> list[str]:
    """One line per front door with the URL a client connects to: its base (a REST API's with its stage) and the
    MCP path; the Lambda API's endpoint as it is."""
    return [
        f"  {door.kind:<13} {door.logical_id:<24} {door.url}{'' if door.kind == 'Lambda API' else path}"
        for door in served
    ]


TEMPLATE_OWNED = {
    "STRATUS_TASK_WORKER": "the task worker's name, from TaskWorkerFunction",
    "STRATUS_TASK_WORKER_DURABLE": "the durable task worker's alias, from DurableTasks",
    "STRATUS_TRUST_REQUEST_CONTEXT_HEADER": "true on the streaming function alone, behind the Web Adapter",
    "STRATUS_METRICS_NAMESPACE": "Stratus/<stack name>",
}
"""Settings the template gives each function from the stack itself: a shell's value would point a function at
another stack's parts, so it is not passed (and `stratus local` says so)."""


def shell_settings(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The `STRATUS_*` variables of the shell that every function gets, on top of the template's, and a line for
    each one that is not passed.

    Raises:
        SettingsError: a variable no setting has (with a did-you-mean), or a value that does not parse: every one,
            as `stratus serve` refuses them.
    """
    from stratus.settings import Settings

    given = {key: value for key, value in environ.items() if key.startswith("STRATUS_")}
    Settings.from_env({key: value for key, value in given.items() if key not in TEMPLATE_OWNED})
    skipped = [
        f"{key} is not passed: template.yaml sets it ({TEMPLATE_OWNED[key]})"
        for key in sorted(given)
        if key in TEMPLATE_OWNED
    ]
    return {key: value for key, value in given.items() if key not in TEMPLATE_OWNED}, skipped


def container_overrides(
    args: argparse.Namespace, store: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The local environment every function gets on top of the template's: the shared `store`'s settings, a secret
    key, then every `STRATUS_*` variable of the shell (`shell_settings`) and the flags."""
    environ = os.environ if environ is None else environ
    passed, _ = shell_settings(environ)
    overrides = {
        # The template's key is an SSM parameter; every container of a run signs with the same one.
        "STRATUS_SECRET_KEY": secrets.token_hex(32),
        **passed,
        **store,
    }
    app = args.app or environ.get("STRATUS_APP")
    if app:
        overrides["STRATUS_APP"] = app
    gateway = args.gateway or environ.get("STRATUS_GATEWAY_CONFIG")
    if gateway:
        overrides["STRATUS_GATEWAY_CONFIG"] = str(Path(gateway).resolve())
    return overrides


def debugging(environ: Mapping[str, str]) -> bool:
    """Whether `STRATUS_LOG_LEVEL=DEBUG` asks for everything: the embedded DynamoDB's access log, the SAM
    translator's notices, each invocation's EMF document, and the REPORT line of each invocation a front door's
    request made (its billed time is on the door's line: `stratus.emulator.access_line`)."""
    return environ.get("STRATUS_LOG_LEVEL", "").upper() == "DEBUG"


def quiet_libraries() -> None:
    """The libraries' own chatter, kept for DEBUG: moto's server logs every request it serves (werkzeug), and the
    SAM translator warns of feature toggles it has no configuration for."""
    import logging

    for name in ("werkzeug", "samtranslator"):
        logging.getLogger(name).setLevel(logging.ERROR)


EMF_PREFIX = b'{"_aws"'
"""How an EMF document starts (stratus.observability writes `_aws` first): a metric, not a line to read."""


@contextmanager
def console(sink: IO[bytes]) -> Iterator[IO[bytes]]:
    """Where the containers write: a pipe whose lines reach `sink` in order, but for EMF documents."""
    read_end, write_end = os.pipe()
    writer = os.fdopen(write_end, "wb", buffering=0)

    def relay() -> None:
        with os.fdopen(read_end, "rb") as reader:
            for line in reader:
                if not line.startswith(EMF_PREFIX):
                    sink.write(line)
                    sink.flush()

    relaying = threading.Thread(target=relay, name="stratus-local-console", daemon=True)
    relaying.start()
    try:
        yield writer
    finally:
        writer.close()  # the containers' copies close as they end; the relay is a daemon
        relaying.join(1)


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; 2 when the template or the settings are refused, or the `[local]` extra is missing."""
    if (package := missing_package()) is not None:
        sys.stderr.write(
            f"stratus: stratus local needs the {package} package, which is not installed: "
            "pip install 'stratus-mcp[local]'\n"
        )
        return 2
    if args.traces and not _importable("opentelemetry.proto.collector.trace.v1.trace_service_pb2"):
        sys.stderr.write("stratus: stratus local --traces needs the otel extra: pip install 'stratus-mcp[otel]'\n")
        return 2
    from stratus.settings import SettingsError

    try:
        _, skipped = shell_settings(os.environ)
    except SettingsError as refused:
        for problem in refused.problems:
            sys.stderr.write(f"stratus: {problem}\n")
        return 2
    for line in skipped:
        sys.stderr.write(f"stratus: {line}\n")
    named = args.store or os.environ.get("STRATUS_STORE")
    with ExitStack() as held:
        output = None
        if not debugging(os.environ):
            quiet_libraries()
            output = held.enter_context(console(sys.stdout.buffer))
        shared = {"STRATUS_STORE": named} if named else held.enter_context(_embedded_store())
        overrides, notes = container_overrides(args, shared), []
        if args.sign_in:
            from stratus.emulator.local_sign_in import SignInRefusedError, local_sign_in
            from stratus.emulator.sign_in_provider import ProviderUnavailableError

            try:
                given = dict(args.parameter)
                signed = held.enter_context(local_sign_in(args.host, args.port, given, sys.stderr.buffer))
            except (SignInRefusedError, ProviderUnavailableError) as refused:
                sys.stderr.write(f"stratus: {refused}\n")
                return 2
            args.parameter = list(signed.parameters.items())
            overrides.update(signed.environment)
            notes.append(signed.banner)
        return _serve(args, overrides, output, notes)


@contextmanager
def _embedded_store() -> Iterator[dict[str, str]]:
    """DynamoDB on 127.0.0.1 with the stack's table (stratus.emulator.local_dynamodb), for every container to share."""
    from stratus.emulator.local_dynamodb import embedded_dynamodb

    server, settings = embedded_dynamodb()
    try:
        yield settings
    finally:
        server.stop()


def _check_template_app(stack: Stack) -> None:
    """Refuse a template whose app the containers could not import, as they would import it: from the function's code
    folder, with this Python's packages (and not from where `stratus local` runs).

    Raises:
        ImportError: naming the app, the folder, why, and the flags that name another app.
    """
    for function in stack.functions.values():
        app = function.environment.get("STRATUS_APP")
        if not app:
            continue
        module = app.split(":", 1)[0]
        environment = {**os.environ, "PYTHONPATH": str(function.code_dir)}
        tried = subprocess.run(  # noqa: S603 - this Python, importing the template's own module
            [sys.executable, "-c", f"import importlib; importlib.import_module({module!r})"],
            cwd=function.code_dir,
            env=environment,
            capture_output=True,
            text=True,
            check=False,
        )
        if tried.returncode != 0:
            reason = (tried.stderr.strip().splitlines() or ["it failed"])[-1]
            raise ImportError(
                f"the template's app {app} cannot be imported from {function.code_dir} ({reason}): pass --app "
                "MODULE:ATTR, or --parameter ServerApp=MODULE:ATTR"
            )
        return  # every function serves the same app


def _serve(
    args: argparse.Namespace, overrides: dict[str, str], output: IO[bytes] | None = None, notes: Sequence[str] = ()
) -> int:
    store = overrides["STRATUS_STORE"]
    from stratus.emulator.intrinsics import TemplateError
    from stratus.emulator.local_aws import LocalAws, Options, PublicationError
    from stratus.emulator.stack import read_stack
    from stratus.handlers.loading import load_server, registered
    from stratus.stores.urls import StoreConfigError, parse_store_url

    template = Path(args.template)
    shown = ""  # what the app registered, when it is imported here (--app or STRATUS_APP)
    try:
        parse_store_url(store)
        if "STRATUS_APP" in overrides:
            shown = registered(load_server(overrides["STRATUS_APP"]))
        if not template.is_file():
            raise TemplateError(f"no template at {template}: pass --template FILE")
        stack = read_stack(template, dict(args.parameter))
        if "STRATUS_APP" not in overrides:
            _check_template_app(stack)
    except (StoreConfigError, TemplateError, ValueError, ImportError) as error:
        sys.stderr.write(f"stratus: {error}\n")
        return 2
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    options = Options(
        containers=args.containers,
        throttle=args.throttle,
        retire_rate=args.retire_rate,
        seed=seed,
        environment=overrides,
        host=args.host,
        port=args.port,
        remap_www_authenticate=args.remap_www_authenticate,
        deliver_events_twice=args.deliver_events_twice,
        iam=not args.no_iam,
        ssm_tps=args.ssm_tps,
        traces=args.traces,
        output=output,
        door_reports=debugging(os.environ),
    )
    if store.startswith("memory:") and args.containers > 1:
        sys.stderr.write(
            "stratus: memory:// is each container's own: state does not follow a request to another container "
            "(leave --store out for the embedded DynamoDB, or pass --store redis://... to share one)\n"
        )
    for function in stack.functions.values() if options.iam else ():
        if function.role is not None and function.role.unchecked:
            sys.stderr.write(f"stratus: IAM not checked for {function.logical_id}: {function.role.unchecked}\n")
    stopped = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stopped.set())
    aws = LocalAws(stack, options)
    try:
        with aws.running():
            sys.stdout.write(
                f"Serving {template} locally (store {store}, up to {args.containers} containers per function, "
                f"seed {seed}):\n"
            )
            for line in door_lines(aws.served, mcp_path(stack, overrides)):
                sys.stdout.write(line + "\n")
            if shown:
                sys.stdout.write(shown + "\n")
            for note in notes:
                sys.stdout.write(note + "\n")
            sys.stdout.flush()
            stopped.wait()
    except OSError as error:
        sys.stderr.write(f"stratus: {error}\n")
        return 2
    except PublicationError as error:
        sys.stderr.write(f"stratus: {error}\n")
        return 1
    sys.stdout.write(f"The bill (https://aws.amazon.com/lambda/pricing/):\n{aws.bill.table()}")
    sys.stdout.flush()
    return 0
