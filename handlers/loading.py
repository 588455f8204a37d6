"""Find the server a deployment serves: a `module:attribute` reference, or a gateway's upstream configuration."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from stratus.config import Settings
from stratus.server.server import McpServer


def load_server(reference: str) -> McpServer:
    """Import `module:attribute` and check it is an `McpServer`.

    Raises:
        ValueError: the reference is malformed or does not name an McpServer.
    """
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected MODULE:ATTRIBUTE, got {reference!r}")
    server = getattr(importlib.import_module(module_name), attribute, None)
    if not isinstance(server, McpServer):
        raise ValueError(f"{reference} is not an McpServer")
    return server


def load_served(settings: Settings) -> McpServer:
    """The gateway `settings.gateway_config` describes, else the server `settings.app` names.

    Raises:
        ValueError: the reference or the configuration is bad (a GatewayConfigError lists every problem).
        OSError: the configuration file cannot be read.
    """
    if settings.gateway_config is None:
        return load_server(settings.app)
    from stratus.gateway.config import parse_document
    from stratus.gateway.served import GatewayServer
    from stratus.handlers.secrets import resolve_reference

    upstreams = parse_document(Path(settings.gateway_config).read_text(encoding="utf-8"))
    return GatewayServer(
        upstreams,
        resolve=resolve_reference,
        allowed_networks=settings.gateway_allowed_networks,
        # A Lambda container is frozen between invocations: it cannot keep listening to its upstreams.
        watch="AWS_LAMBDA_FUNCTION_NAME" not in os.environ,
    )
