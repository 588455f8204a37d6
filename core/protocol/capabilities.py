"""The capabilities a server advertises: only what it registered and Stratus implements."""

from __future__ import annotations

from typing import Any

from stratus.protocol import versions
from stratus.server.server import McpServer


def server_capabilities(server: McpServer, *, stateless: bool, version: str | None = None) -> dict[str, Any]:
    """Capabilities for `server/discover` (stateless) or `initialize` (handshake era, at the negotiated `version`)."""
    capabilities: dict[str, Any] = {}
    # Subscriptions and list changes reach a handshake-era session's GET stream or a subscriptions/listen stream.
    if server.tools or server.dynamic:
        capabilities["tools"] = {"listChanged": True}
    if server.resources or server.templates or server.dynamic:
        capabilities["resources"] = {"subscribe": True, "listChanged": True}
    if server.prompts or server.dynamic:
        capabilities["prompts"] = {"listChanged": True}
    if server.prompts or server.templates or server.dynamic:
        capabilities["completions"] = {}
    if not stateless:
        capabilities["logging"] = {}
    if any(tool.task_support for tool in server.tools.values()):
        if stateless:
            capabilities["extensions"] = {versions.TASKS_EXTENSION: {}}
        elif version is not None and versions.at_least(version, versions.TASKS_SINCE):
            capabilities["tasks"] = {"cancel": {}, "requests": {"tools": {"call": {}}}}
    return capabilities
