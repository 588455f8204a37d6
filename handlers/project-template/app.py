"""An MCP server on Stratus: one tool, one resource and one prompt.

Run it locally with `stratus serve --app app:server`; template.yaml deploys it (its `ServerApp` is `app:server`).
"""

from __future__ import annotations

from stratus import Context, McpServer, ToolError

server = McpServer("my-server", "0.1.0", instructions="Counts words, shows a style guide and drafts summaries.")


@server.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
async def count_words(text: str, ctx: Context) -> int:
    """Count the words in a text.

    Args:
        text: the text to count.
    """
    words = len(text.split())
    if words == 0:
        raise ToolError("The text has no words to count")
    await ctx.info("counted words", words=words)
    return words


@server.resource("notes://style-guide", mime_type="text/markdown")
def style_guide() -> str:
    """The house style for summaries."""
    return "# Style guide\n\nShort sentences. One idea each."


@server.prompt()
def summarize(text: str) -> str:
    """Ask for a summary that follows the style guide.

    Args:
        text: the text to summarize.
    """
    return f"Summarize this in three short sentences, following notes://style-guide:\n\n{text}"
