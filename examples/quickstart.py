"""The README's first server: a tool, a resource template and a prompt."""

from __future__ import annotations

from stratus import McpServer, ToolError

server = McpServer("notes", "1.0.0", instructions="Arithmetic and notes.")


@server.tool(annotations={"readOnlyHint": True})
def divide(a: float, b: float) -> float:
    """Divide a by b.

    Args:
        a: the dividend.
        b: the divisor.
    """
    if b == 0:
        raise ToolError("cannot divide by zero")
    return a / b


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """A note by name."""
    return f"Note {name}"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}."
