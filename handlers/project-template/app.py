"""An MCP server on Stratus: two tools (one asks the user first), one resource and one prompt.

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


@server.tool()
async def publish_note(title: str, ctx: Context) -> str:
    """Publish a note, once the user confirms.

    Args:
        title: the note's title.
    """
    form = {"type": "object", "properties": {"publish": {"type": "boolean"}}, "required": ["publish"]}
    answer = await ctx.elicit(f"Publish {title!r}?", form, key="confirm")
    if answer["action"] != "accept" or not answer["content"]["publish"]:
        return "Not published"
    return f"Published {title!r}"


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
