"""The subjects as ASGI apps for the uvicorn throughput run (`uvicorn asgi_apps:<subject>` from bench/).

Each attribute is built only when uvicorn imports it by name through `__getattr__`, so a subject's venv never
needs another subject's packages.
"""

from __future__ import annotations

from typing import Any


def _stratus() -> Any:
    from examples.add import server
    from stratus import build_app

    return build_app(server)


def _floor() -> Any:
    from starlette_floor import app

    return app


def _sdk() -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    server = MCPServer("add")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return server.streamable_http_app(json_response=True, stateless_http=True, transport_security=security)


def _fastmcp() -> Any:
    from fastmcp import FastMCP

    server = FastMCP("add")

    @server.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server.http_app(json_response=True, stateless_http=True, host_origin_protection=False)


_BUILDERS = {"stratus": _stratus, "floor": _floor, "sdk": _sdk, "fastmcp": _fastmcp}


def __getattr__(name: str) -> Any:
    if name not in _BUILDERS:
        raise AttributeError(name)
    return _BUILDERS[name]()
