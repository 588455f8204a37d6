"""The same one-tool `add` server written with `awslabs-mcp-lambda-handler` (no session store: its default)."""

from __future__ import annotations

from typing import Any

from awslabs.mcp_lambda_handler import MCPLambdaHandler

mcp = MCPLambdaHandler("add", "1.0.0")


@mcp.tool()  # type: ignore[untyped-decorator]  # awslabs ships no type hints
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result: dict[str, Any] = mcp.handle_request(event, context)
    return result
