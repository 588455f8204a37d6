"""The capabilities a server advertises: only what it registered and Stratus implements."""

from __future__ import annotations

from typing import Any

from core.server.server import McpServer


def server_capabilities(server: McpServer, *, modern: bool) -> dict[str, Any]:
    """Capabilities for `server/discover` (modern) or `initialize` (legacy)."""
    capabilities: dict[str, Any] = {}
    if server.tools:
        capabilities["tools"] = {}
    if server.resources or server.templates:
        # Legacy sessions record subscriptions; the modern subscriptions/listen stream is not served yet.
        capabilities["resources"] = {} if modern else {"subscribe": True}
    if server.prompts:
        capabilities["prompts"] = {}
    if server.prompts or server.templates:
        capabilities["completions"] = {}
    if not modern:
        capabilities["logging"] = {}
    return capabilities
