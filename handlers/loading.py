"""Find the server a deployment serves: a `module:attribute` reference, or a gateway's upstream configuration."""

from __future__ import annotations

import importlib
import importlib.util
import os
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from stratus.server.server import McpServer
from stratus.server.signature import RegistrationError
from stratus.settings import Settings, SettingsError

T = TypeVar("T")
APP_SETTING = "STRATUS_APP (--app)"
GATEWAY_SETTING = "STRATUS_GATEWAY_CONFIG (--gateway)"
DEMO_APP = "examples.demo:server"
"""What an unset `STRATUS_APP` serves where it can be imported: a checkout of Stratus (`make run`), and the Lambda
build, which copies `examples/` beside the package. The wheel does not install it."""


def app_reference(settings: Settings) -> str:
    """The `module:attribute` to serve: `settings.app`, else the demo where it can be imported.

    Raises:
        ValueError: no app is set and the demo is not here (an installed wheel outside Stratus's repository).
    """
    if settings.app is not None:
        return settings.app
    try:
        demo = importlib.util.find_spec(DEMO_APP.partition(":")[0])
    except ImportError:  # no `examples` package at all
        demo = None
    if demo is None:
        raise ValueError(
            f"no server to serve: set {APP_SETTING} to your McpServer as MODULE:ATTRIBUTE, e.g. app:server (the demo, "
            f"{DEMO_APP}, is not installed with Stratus)"
        )
    return DEMO_APP


def load_server(reference: str) -> McpServer:
    """Import `module:attribute` and check it is an `McpServer`.

    Raises:
        ValueError: the reference is malformed or does not name an McpServer.
    """
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"{APP_SETTING} must be MODULE:ATTRIBUTE, got {reference!r}")
    try:
        module = importlib.import_module(module_name)
    except RegistrationError as error:
        raise ValueError(
            f"{APP_SETTING} names {reference}, but {module_name!r} cannot register a handler: {error}"
        ) from None
    except ImportError as error:  # said to the operator at start-up, never to a client
        raise ImportError(_unimportable(reference, module_name, attribute, error)) from error
    if not hasattr(module, attribute):
        raise ValueError(
            f"{APP_SETTING} names {reference}, but module {module_name!r} has no attribute {attribute!r}"
            + _offer(module)
        )
    server = getattr(module, attribute)
    if not isinstance(server, McpServer):
        raise ValueError(
            f"{reference} is not an McpServer (it is a {type(server).__name__}): set {APP_SETTING} to your server's"
        )
    return server


def _unimportable(reference: str, module_name: str, attribute: str, error: ImportError) -> str:
    """Why `module_name` cannot be imported, and what to do: a file name given for a module, the module's own
    failing import (where it is), or a module that is not on the path."""
    said = f"{APP_SETTING} names {reference}, but {module_name!r} cannot be imported: {error}"
    if module_name.endswith(".py"):
        return f"{said}; did you mean {module_name.removesuffix('.py').replace('/', '.')}:{attribute}?"
    missing = getattr(error, "name", None)
    if missing is not None and missing != module_name and not module_name.startswith(f"{missing}."):
        # The module was found, and its own import failed: say where, not where to look for it.
        frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        where = f" ({frame.filename}:{frame.lineno})" if frame is not None else ""
        return f"{said}{where}: {module_name} imports {missing!r}, which is not installed or not on the path"
    return f"{said} (is the module's folder the current one, or on PYTHONPATH?)"


def _offer(module: ModuleType) -> str:
    """What the module does hold: its McpServer instances (with the reference to pass), else its public names."""
    servers = sorted(name for name, value in vars(module).items() if isinstance(value, McpServer))
    if servers:
        return f"; its McpServer: {', '.join(servers)} (e.g. --app {module.__name__}:{servers[0]})"
    public = sorted(name for name in vars(module) if not name.startswith("_"))
    shown = ", ".join(public[:20]) + (", ..." if len(public) > 20 else "")
    return f" and no McpServer; its public names: {shown or '(none)'}"


def load_served(settings: Settings) -> McpServer:
    """The gateway `settings.gateway_config` describes, else the server `settings.app` names (the demo where it is
    unset and importable: `app_reference`).

    Raises:
        ValueError: the reference or the configuration is bad (a GatewayConfigError lists every problem).
        OSError: the configuration file cannot be read.
    """
    if settings.gateway_config is None:
        return load_server(app_reference(settings))
    from stratus.gateway.config import GatewayConfigError, parse_document
    from stratus.gateway.served import GatewayServer
    from stratus.handlers.secrets import resolve_reference

    path = settings.gateway_config
    try:
        upstreams = parse_document(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise OSError(f"{GATEWAY_SETTING} names {path}, which cannot be read: {error.strerror or error}") from None
    except GatewayConfigError as error:
        raise GatewayConfigError([f"{GATEWAY_SETTING} {path}: {problem}" for problem in error.problems]) from None
    return GatewayServer(
        upstreams,
        resolve=resolve_reference,
        allowed_networks=settings.gateway_allowed_networks,
        # A Lambda container is frozen between invocations: it cannot keep listening to its upstreams.
        watch="AWS_LAMBDA_FUNCTION_NAME" not in os.environ,
    )


def at_start(step: Callable[[], T]) -> T:
    """`step()` for a process starting (a Lambda function's init, `run.sh`): a mistake in the settings, the app or
    its configuration is printed as one line per problem naming the setting, and the process exits with status 1,
    instead of a traceback that buries it."""
    try:
        return step()
    except SettingsError as error:
        raise SystemExit("\n".join(f"stratus: {problem}" for problem in error.problems)) from None
    except (ValueError, ImportError, OSError) as error:
        raise SystemExit(f"stratus: {error}") from None  # printed on stderr, exit status 1


SHOWN_NAMES = 8
"""Names listed per kind in `registered`; the rest are counted."""


def registered(server: McpServer) -> str:
    """One line saying what `server` registered (counts and names of its tools, resources, resource templates and
    prompts), printed at start so that an app imported from the wrong folder, or a decorator that registered
    nothing, shows at once."""
    if server.dynamic:
        return f"{server.name} serves the tools, resources and prompts of its upstreams"
    kinds = (
        ("tool", list(server.tools)),
        ("resource", list(server.resources)),
        ("resource template", list(server.templates)),
        ("prompt", list(server.prompts)),
    )
    return "Registered " + ", ".join(_counted(kind, names) for kind, names in kinds)


def _counted(kind: str, names: list[str]) -> str:
    counted = f"{len(names)} {kind}{'' if len(names) == 1 else 's'}"
    if not names:
        return counted
    shown = ", ".join(names[:SHOWN_NAMES]) + (f", +{len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else "")
    return f"{counted} ({shown})"


async def store_problem(settings: Settings) -> str | None:
    """One line naming `STRATUS_STORE`, why its store failed a first read and what fixes it; None when it answered
    (or is the process's own memory)."""
    from stratus.composition import stores_for
    from stratus.errors import StoreUnavailableError
    from stratus.stores.urls import parse_store_url

    if parse_store_url(settings.store).backend == "memory":
        return None
    stores = stores_for(settings)
    try:
        await stores.sessions.census()
    except StoreUnavailableError as error:
        return f"STRATUS_STORE: {error.cause or 'the store did not answer'}"
    finally:
        await stores.aclose()
    return None


def problem_lines(error: Exception) -> list[str]:
    """What `load_served` refused, one line each: every problem of a gateway configuration, else the error's one."""
    from stratus.gateway.config import GatewayConfigError

    return list(error.problems) if isinstance(error, GatewayConfigError) else [str(error)]
