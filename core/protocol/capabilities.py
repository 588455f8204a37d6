"""The capabilities a server advertises: only what it registered and Stratus implements."""

from __future__ import annotations

from typing import Any

from stratus.protocol import versions
from stratus.server.server import McpServer


def server_capabilities(server: McpServer, *, stateless: bool, version: str | None = None) -> dict[str, Any]:
    """Capabilities for `server/discover` (stateless) or `initialize` (handshake era, at the negotiated `version`)."""
    capabilities: dict[str, Any] = {}
    # Subscriptions and list changes reach a handshake-era session's GET stream or a subscriptions/listen stream.
    changes = {"listChanged": True} if server.list_changes or server.dynamic else {}
    if server.tools or server.dynamic:
        capabilities["tools"] = {**changes}
    if server.resources or server.templates or server.dynamic:
        capabilities["resources"] = {"subscribe": True, **changes}
    if server.prompts or server.dynamic:
        capabilities["prompts"] = {**changes}
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


def notifies_outside_calls(server: McpServer) -> bool:
    """Whether a session may get notifications outside its calls: list changes, or updates of resources it can
    subscribe to. When none can come, a GET stream would only make its client poll for nothing."""
    return bool(server.list_changes or server.dynamic or server.resources or server.templates)
