"""Find the server a deployment serves from a `module:attribute` reference."""

from __future__ import annotations

import importlib

from core.server.server import McpServer


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
