"""The same one-tool server on the official MCP Python SDK (2.x, `MCPServer`), as a buffered Lambda handler:
its Streamable HTTP app in stateless JSON mode under Mangum, with the lifespan started once (lifespan_once.py)
and its per-request INFO logs off, as a production deployment would set them."""

import logging

from lifespan_once import start_lifespan_once
from mangum import Mangum
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

logging.disable(logging.INFO)

server = MCPServer("add")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


app = server.streamable_http_app(
    json_response=True,
    stateless_http=True,
    # API Gateway checks the Host; the SDK's own DNS-rebinding check would refuse the gateway's domain.
    transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
)
start_lifespan_once(app)
handler = Mangum(app, lifespan="off")
