"""`@server.tool` and `@server.prompt` without parentheses (as FastMCP users write them) register the function with
the defaults; `@server.resource` without its URI is refused at import instead of registering nothing."""

from __future__ import annotations

import pytest

from stratus import McpServer
from tests.fixtures.clients import McpFactory

pytestmark = pytest.mark.anyio


def _server() -> McpServer:
    server = McpServer("bare", "1")

    @server.tool
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    @server.prompt
    def review(code: str) -> str:
        """Ask for a review."""
        return f"Review this: {code}"

    return server


def test_the_bare_forms_return_the_function_itself() -> None:
    server = McpServer("bare", "1")

    def plain(value: int) -> int:
        return value

    assert server.tool(plain) is plain
    assert server.prompt(plain) is plain
    assert list(server.tools) == list(server.prompts) == ["plain"]


async def test_a_bare_tool_is_listed_and_called(mcp_factory: McpFactory) -> None:
    mcp = await mcp_factory(_server())
    listed = (await mcp.stateless("tools/list")).json()["result"]["tools"]
    assert [(tool["name"], tool["description"]) for tool in listed] == [("shout", "Say it louder.")]
    called = (await mcp.stateless("tools/call", {"name": "shout", "arguments": {"text": "hi"}})).json()["result"]
    assert called["content"] == [{"type": "text", "text": "HI"}]


async def test_a_bare_prompt_is_listed_and_rendered(mcp_factory: McpFactory) -> None:
    mcp = await mcp_factory(_server())
    listed = (await mcp.stateless("prompts/list")).json()["result"]["prompts"]
    assert [prompt["name"] for prompt in listed] == ["review"]
    got = (await mcp.stateless("prompts/get", {"name": "review", "arguments": {"code": "x = 1"}})).json()["result"]
    assert got["messages"][0]["content"]["text"] == "Review this: x = 1"


def test_a_bare_resource_decorator_is_refused_at_import_naming_the_missing_uri() -> None:
    server = McpServer("bare", "1")
    with pytest.raises(TypeError, match="URI"):

        @server.resource  # type: ignore[arg-type]
        def notes() -> str:
            return "notes"

    assert not server.resources and not server.templates
