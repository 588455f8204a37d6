"""The composition root builds every part from the server it is given, and leaves that server as it was."""

from __future__ import annotations

import copy

from stratus import McpServer, Settings, build_app
from stratus.metrics import LocalMetrics
from stratus.server.hooks import NO_HOOKS, hooks_of


def _server() -> McpServer:
    server = McpServer("untouched")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.resource("note://{name}")
    def note(name: str) -> str:
        return name

    return server


def test_building_apps_never_changes_the_server_they_serve() -> None:
    server = _server()
    before = copy.copy(vars(server))
    build_app(server, Settings(), metrics=LocalMetrics())
    build_app(server, Settings(), metrics=LocalMetrics())
    assert vars(server) == before
    assert all(vars(server)[name] is value for name, value in before.items())


def test_a_plain_server_has_no_hooks_and_a_gateway_is_its_own() -> None:
    from stratus.gateway.served import GatewayServer

    gateway = GatewayServer([])
    assert hooks_of(_server()) is NO_HOOKS
    assert hooks_of(gateway) is gateway
