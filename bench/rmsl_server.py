"""The stdio MCP server run-mcp-servers-with-aws-lambda spawns (one process per request): the same `add` tool on
the official SDK 1.x that package depends on. Run only by bench/rmsl_app.py, in the anchor's venv."""

from mcp.server.fastmcp import FastMCP

server = FastMCP("add", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


server.run()
