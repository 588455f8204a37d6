"""The capabilities a server advertises: only what it registered and Stratus implements."""

from __future__ import annotations

from typing import Any

from core.server.server import McpServer


def server_capabilities(server: McpServer, *, modern: bool) -> dict[str, Any]:
    """Capabilities for `server/discover` (modern) or `initialize` (legacy)."""
    capabilities: dict[str, Any] = {}
    # Subscriptions and list changes reach a legacy session's GET stream or a subscriptions/listen stream.
    if server.tools:
        capabilities["tools"] = {"listChanged": True}
    if server.resources or server.templates:
        capabilities["resources"] = {"subscribe": True, "listChanged": True}
    if server.prompts:
        capabilities["prompts"] = {"listChanged": True}
    if server.prompts or server.templates:
        capabilities["completions"] = {}
    if not modern:
        capabilities["logging"] = {}
    return capabilities
