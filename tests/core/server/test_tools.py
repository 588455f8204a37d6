"""Tool definitions from type hints, and how return values become results."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from stratus import Context, Image, McpServer, Text, ToolResult
from tests.fixtures.clients import McpFactory
from tests.fixtures.wire import McpHttp, validate

pytestmark = pytest.mark.anyio


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


def make_server() -> McpServer:
    server = McpServer("tools-test")

    @server.tool(title="Paint", annotations={"destructiveHint": False}, icons=[{"src": "https://example.com/i.png"}])
    def paint(color: Color, where: Point, times: int = 1, label: str | None = None) -> str:
        """Paint something.

        Args:
            color: which color to use.
            where: the point to paint at,
                in canvas coordinates.
            times: how many coats.
        """
        return f"{color.value} at {where.x},{where.y} x{times} {label}"

    @server.tool()
    async def slow_echo(text: Annotated[str, Field(description="echoed back", max_length=5)], ctx: Context) -> str:
        """Echo text asynchronously."""
        return f"{text} ({ctx.protocol_version})"

    @server.tool()
    def point(x: int) -> Point:
        """Make a point."""
        return Point(x=x)

    @server.tool()
    def mode(kind: Literal["a", "b"]) -> list[str]:
        """List twice."""
        return [kind, kind]

    @server.tool()
    def picture() -> list[Text | Image]:
        """A caption and a picture."""
        return [Text("caption"), Image(b"\x89PNG", "image/png")]

    @server.tool()
    def failing() -> ToolResult:
        """Reports its own failure."""
        return ToolResult([Text("nope")], is_error=True)

    @server.tool()
    def crashes() -> str:
        """Raises an unexpected exception."""
        raise RuntimeError("secret database password in exception text")

    return server


@pytest.fixture
async def mcp(mcp_factory: McpFactory) -> McpHttp:
    return await mcp_factory(make_server())


async def _tools(mcp: McpHttp) -> dict[str, dict[str, object]]:
    result = (await mcp.stateless("tools/list")).json()["result"]
    return {tool["name"]: tool for tool in result["tools"]}


async def test_input_schema_has_required_optional_defaults_and_docstring_descriptions(mcp: McpHttp) -> None:
    paint = (await _tools(mcp))["paint"]
    schema = paint["inputSchema"]
    assert isinstance(schema, dict)
    assert schema["type"] == "object"
    assert schema["required"] == ["color", "where"]
    assert schema["properties"]["times"]["default"] == 1
    assert schema["properties"]["times"]["description"] == "how many coats."
    assert schema["properties"]["where"]["description"] == "the point to paint at, in canvas coordinates."
    assert schema["properties"]["label"]["default"] is None
    assert schema["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert schema["$defs"]["Point"]["required"] == ["x"]
    assert paint["description"] == "Paint something."
    assert paint["title"] == "Paint"
    assert paint["annotations"] == {"destructiveHint": False}
    assert paint["icons"] == [{"src": "https://example.com/i.png"}]
    assert "outputSchema" not in paint


async def test_context_parameter_is_injected_and_hidden_from_the_schema(mcp: McpHttp) -> None:
    slow_echo = (await _tools(mcp))["slow_echo"]
    assert slow_echo["inputSchema"] == {
        "type": "object",
        "properties": {"text": {"description": "echoed back", "maxLength": 5, "title": "Text", "type": "string"}},
        "required": ["text"],
    }
    result = (await mcp.stateless("tools/call", {"name": "slow_echo", "arguments": {"text": "hi"}})).json()["result"]
    assert result["content"] == [{"type": "text", "text": "hi (2026-07-28)"}]


async def test_model_and_enum_arguments_are_converted_before_the_call(mcp: McpHttp) -> None:
    arguments = {"color": "blue", "where": {"x": 3}, "times": 2}
    result = (await mcp.stateless("tools/call", {"name": "paint", "arguments": arguments})).json()["result"]
    assert result["content"] == [{"type": "text", "text": "blue at 3,0 x2 None"}]


async def test_model_return_gives_output_schema_and_structured_content(mcp: McpHttp) -> None:
    tool = (await _tools(mcp))["point"]
    assert tool["outputSchema"] == {
        "type": "object",
        "properties": {"x": {"title": "X", "type": "integer"}, "y": {"default": 0, "title": "Y", "type": "integer"}},
        "required": ["x"],
    }
    result = (await mcp.stateless("tools/call", {"name": "point", "arguments": {"x": 5}})).json()["result"]
    assert result["structuredContent"] == {"x": 5, "y": 0}


async def test_list_return_is_wrapped_under_result(mcp: McpHttp) -> None:
    tool = (await _tools(mcp))["mode"]
    assert tool["outputSchema"]["required"] == ["result"]  # type: ignore[index]
    result = (await mcp.stateless("tools/call", {"name": "mode", "arguments": {"kind": "b"}})).json()["result"]
    assert result["structuredContent"] == {"result": ["b", "b"]}
    bad = (await mcp.stateless("tools/call", {"name": "mode", "arguments": {"kind": "c"}})).json()["result"]
    assert bad["isError"] is True


async def test_content_blocks_pass_through_without_output_schema(mcp: McpHttp) -> None:
    assert "outputSchema" not in (await _tools(mcp))["picture"]
    result = (await mcp.stateless("tools/call", {"name": "picture"})).json()["result"]
    assert result["content"] == [
        {"type": "text", "text": "caption"},
        {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
    ]


async def test_tool_result_sets_is_error_itself(mcp: McpHttp) -> None:
    result = (await mcp.stateless("tools/call", {"name": "failing"})).json()["result"]
    assert result["isError"] is True and result["content"] == [{"type": "text", "text": "nope"}]


async def test_unexpected_exception_becomes_is_error_without_its_text(
    mcp: McpHttp, caplog: pytest.LogCaptureFixture
) -> None:
    result = (await mcp.stateless("tools/call", {"name": "crashes"})).json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("Tool 'crashes' failed with an internal error (reference ")
    assert "secret" not in text and "RuntimeError" not in text
    assert any(record.exc_info for record in caplog.records), "the exception is logged for operators"


async def test_every_tool_definition_is_schema_valid_for_every_version(mcp: McpHttp) -> None:
    tools = await _tools(mcp)
    assert sorted(tools) == ["crashes", "failing", "mode", "paint", "picture", "point", "slow_echo"]
    for tool in tools.values():
        for version in ("2025-06-18", "2025-11-25", "2026-07-28"):
            validate(version, "Tool", tool)


def test_duplicate_tool_names_are_refused() -> None:
    server = McpServer("dup")

    @server.tool()
    def same() -> str:
        return ""

    with pytest.raises(ValueError, match="duplicate tool"):
        server.tool(name="same")(lambda: "")


def test_variadic_parameters_are_refused_at_registration() -> None:
    server = McpServer("varargs")
    with pytest.raises(TypeError):

        @server.tool()
        def spread(*values: int) -> int:
            return sum(values)


EXPLICIT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"who": {"$anchor": "whoDef", "type": "string", "minLength": 1}},
    "properties": {"name": {"$ref": "#/$defs/who"}, "mode": {"enum": ["short", "long"]}},
    "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["mode"]}]}],
    "if": {"properties": {"mode": {"const": "long"}}, "required": ["mode"]},
    "then": {"required": ["name"]},
    "else": {"required": []},
    "additionalProperties": False,
    "x-vendor": {"kept": True},
}


async def test_an_explicit_input_schema_is_listed_verbatim(mcp_factory: McpFactory) -> None:
    server = McpServer("explicit")

    @server.tool(input_schema=EXPLICIT)
    def greet(name: str = "you", mode: str = "short") -> str:
        """Greets."""
        return f"hello {name} ({mode})"

    mcp = await mcp_factory(server)
    listed = (await _tools(mcp))["greet"]
    assert listed["inputSchema"] == EXPLICIT
    result = (await mcp.stateless("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})).json()["result"]
    assert result["content"] == [{"type": "text", "text": "hello Ada (short)"}]


def test_an_explicit_input_schema_must_describe_an_object() -> None:
    with pytest.raises(ValueError, match="type 'object'"):
        McpServer("bad").tool(input_schema={"type": "string"})
