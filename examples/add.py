"""One tool, `add(a, b)`: the server the benchmarks compare across frameworks.

`handler` is a buffered Lambda handler for it; `STRATUS_STORE` picks the store.
"""

from __future__ import annotations

from stratus import McpServer, Settings
from stratus.handlers.adapter import make_handler

server = McpServer("add", "1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


handler = make_handler(server, Settings.from_env(app="examples.add:server"))
