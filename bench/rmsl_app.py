"""The same one-tool server on `run-mcp-servers-with-aws-lambda`: its API Gateway v2 handler in front of a stdio
MCP server (bench/rmsl_server.py), which it starts, initializes and stops for every request, as the package
does. Its own per-request logs are off."""

import logging
import os
import sys
from pathlib import Path

from mcp.client.stdio import StdioServerParameters
from mcp_lambda import APIGatewayProxyEventV2Handler, StdioServerAdapterRequestHandler

logging.disable(logging.INFO)

_server = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).with_name("rmsl_server.py"))], env=dict(os.environ)
)
_handler = APIGatewayProxyEventV2Handler(StdioServerAdapterRequestHandler(_server))


def handler(event: dict[str, object], context: object) -> dict[str, object]:
    return _handler.handle(event, context)  # type: ignore[arg-type]
