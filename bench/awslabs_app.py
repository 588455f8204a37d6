"""The same one-tool `add` server written with `awslabs-mcp-lambda-handler` as its README writes it: no session store
(its default), and no `from __future__ import annotations` (awslabs reads the tool's type hints on every tools/call
with `typing.get_type_hints`, which then compiles and evaluates each string annotation again: +160 to +280 k
instructions per call). bench/awslabs_session_app.py is the same with its sessions in memory."""

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
