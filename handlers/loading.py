"""Find the server a deployment serves: a `module:attribute` reference, or a gateway's upstream configuration."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from stratus.server.server import McpServer
from stratus.settings import Settings

APP_SETTING = "STRATUS_APP (--app)"
GATEWAY_SETTING = "STRATUS_GATEWAY_CONFIG (--gateway)"


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
    except ImportError as error:  # said to the operator at start-up, never to a client
        raise ImportError(
            f"{APP_SETTING} names {reference}, but {module_name!r} cannot be imported: {error} (is the module's "
            "folder the current one, or on PYTHONPATH?)"
        ) from error
    server = getattr(module, attribute, None)
    if not isinstance(server, McpServer):
        found = f"{module_name} has no {attribute!r}" if server is None else f"it is a {type(server).__name__}"
        raise ValueError(f"{reference} is not an McpServer ({found}): set {APP_SETTING} to your server's")
    return server


def load_served(settings: Settings) -> McpServer:
    """The gateway `settings.gateway_config` describes, else the server `settings.app` names.

    Raises:
        ValueError: the reference or the configuration is bad (a GatewayConfigError lists every problem).
        OSError: the configuration file cannot be read.
    """
    if settings.gateway_config is None:
        return load_server(settings.app)
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
