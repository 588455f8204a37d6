"""Resources and templates, prompts, completion and pagination."""

from __future__ import annotations

from enum import Enum
from typing import Literal

import pytest

from stratus import BlobResource, EmbeddedResource, McpServer, TextResource, assistant, user
from stratus.server.resources import compile_template
from tests.fixtures.clients import McpFactory, client_for
from tests.fixtures.wire import McpHttp

pytestmark = pytest.mark.anyio


class Size(Enum):
    SMALL = "small"
    SMOKY = "smoky"
    LARGE = "large"


def make_server() -> McpServer:
    server = McpServer("rp-test", page_size=2)

    @server.resource("file:///readme", mime_type="text/plain", description="The readme.")
    def readme() -> str:
        return "read me"

    @server.resource("file:///logo.png", mime_type="image/png")
    async def logo() -> bytes:
        return b"\x89PNG"

    @server.resource("file:///both")
    def both() -> list[TextResource | BlobResource]:
        return [TextResource("file:///both#a", "a", "text/plain"), BlobResource("file:///both#b", b"b")]

    @server.resource("users://{user_id}/profile/{field}", mime_type="application/json")
    def profile(user_id: int, field: str) -> str:
        return f'{{"user": {user_id}, "field": "{field}"}}'

    @server.resource("files://{+path}")
    def file(path: str) -> str:
        return path

    @server.prompt(title="Order")
    def order(item: str, size: Size = Size.SMALL, sugar: Literal["none", "some"] = "none") -> list[object]:
        """Order a drink.

        Args:
            item: what to order.
        """
        return [user(f"{size.value} {item}, sugar {sugar}"), assistant("Coming up.")]

    @server.prompt()
    def with_resource(uri: str) -> EmbeddedResource:
        """Embed a resource."""
        return EmbeddedResource(TextResource(uri, "embedded", "text/plain"))

    @server.completion(prompt="with_resource")
    def complete_uri(argument: str, value: str, context: dict[str, str]) -> list[str]:
        return [f"file:///{value}{index}" for index in range(150)]

    return server


@pytest.fixture
async def mcp(mcp_factory: McpFactory) -> McpHttp:
    return await mcp_factory(make_server())


async def test_text_and_blob_resources_read_back_with_their_mime_types(mcp: McpHttp) -> None:
    text = (await mcp.stateless("resources/read", {"uri": "file:///readme"})).json()["result"]["contents"]
    assert text == [{"uri": "file:///readme", "text": "read me", "mimeType": "text/plain"}]
    blob = (await mcp.stateless("resources/read", {"uri": "file:///logo.png"})).json()["result"]["contents"]
    assert blob == [{"uri": "file:///logo.png", "blob": "iVBORw==", "mimeType": "image/png"}]
    mixed = (await mcp.stateless("resources/read", {"uri": "file:///both"})).json()["result"]["contents"]
    assert mixed == [
        {"uri": "file:///both#a", "text": "a", "mimeType": "text/plain"},
        {"uri": "file:///both#b", "blob": "Yg=="},
    ]


async def test_template_variables_are_matched_and_converted(mcp: McpHttp) -> None:
    result = (await mcp.stateless("resources/read", {"uri": "users://42/profile/email"})).json()["result"]
    assert result["contents"][0]["text"] == '{"user": 42, "field": "email"}'
    reserved = (await mcp.stateless("resources/read", {"uri": "files://a/b%20c.txt"})).json()["result"]
    assert reserved["contents"][0]["text"] == "a/b c.txt"


async def test_template_variable_of_the_wrong_type_is_invalid_params(mcp: McpHttp) -> None:
    response = await mcp.stateless("resources/read", {"uri": "users://bob/profile/email"})
    assert response.json()["error"]["code"] == -32602


async def test_simple_expansion_does_not_match_across_slashes() -> None:
    pattern, names = compile_template("users://{id}/x")
    assert names == ["id"]
    assert pattern.match("users://1/x") is not None
    assert pattern.match("users://1/2/x") is None
    with pytest.raises(ValueError):
        compile_template("users://{?query}")


async def test_lists_are_paginated_with_opaque_cursors(mcp: McpHttp) -> None:
    first = (await mcp.stateless("resources/list")).json()["result"]
    assert [item["uri"] for item in first["resources"]] == ["file:///readme", "file:///logo.png"]
    second = (await mcp.stateless("resources/list", {"cursor": first["nextCursor"]})).json()["result"]
    assert [item["uri"] for item in second["resources"]] == ["file:///both"]
    assert "nextCursor" not in second


@pytest.mark.parametrize("cursor", ["garbage", "", "AAAA", 7])
async def test_a_bad_cursor_is_invalid_params(mcp: McpHttp, cursor: object) -> None:
    response = await mcp.stateless("resources/list", {"cursor": cursor})
    assert response.json()["error"]["code"] == -32602


async def test_a_tampered_or_foreign_cursor_is_invalid_params(mcp: McpHttp) -> None:
    cursor = (await mcp.stateless("resources/list")).json()["result"]["nextCursor"]
    tampered = cursor[:-2] + ("A" if cursor[-2] != "A" else "B") + cursor[-1]
    assert (await mcp.stateless("resources/list", {"cursor": tampered})).json()["error"]["code"] == -32602
    other_list = await mcp.stateless("prompts/list", {"cursor": cursor})
    assert other_list.json()["error"]["code"] == -32602


async def test_templates_list_names_each_template(mcp: McpHttp) -> None:
    result = (await mcp.stateless("resources/templates/list")).json()["result"]
    assert result["resourceTemplates"] == [
        {"uriTemplate": "users://{user_id}/profile/{field}", "name": "profile", "mimeType": "application/json"},
        {"uriTemplate": "files://{+path}", "name": "file"},
    ]


async def test_prompt_arguments_and_messages(mcp: McpHttp) -> None:
    prompts = (await mcp.stateless("prompts/list")).json()["result"]["prompts"]
    assert prompts[0] == {
        "name": "order",
        "title": "Order",
        "description": "Order a drink.",
        "arguments": [
            {"name": "item", "required": True, "description": "what to order."},
            {"name": "size", "required": False},
            {"name": "sugar", "required": False},
        ],
    }
    result = (
        await mcp.stateless("prompts/get", {"name": "order", "arguments": {"item": "tea", "size": "large"}})
    ).json()
    assert result["result"]["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "large tea, sugar none"}},
        {"role": "assistant", "content": {"type": "text", "text": "Coming up."}},
    ]


async def test_embedded_resource_prompt(mcp: McpHttp) -> None:
    params = {"name": "with_resource", "arguments": {"uri": "test://x"}}
    messages = (await mcp.stateless("prompts/get", params)).json()["result"]["messages"]
    assert messages == [
        {
            "role": "user",
            "content": {
                "type": "resource",
                "resource": {"uri": "test://x", "text": "embedded", "mimeType": "text/plain"},
            },
        }
    ]


async def test_missing_prompt_argument_and_unknown_prompt_are_invalid_params(mcp: McpHttp) -> None:
    missing = await mcp.stateless("prompts/get", {"name": "order", "arguments": {}})
    assert missing.json()["error"]["code"] == -32602
    assert missing.json()["error"]["data"]["problems"] == ["item: Field required"]
    unknown = await mcp.stateless("prompts/get", {"name": "nope"})
    assert unknown.json()["error"]["code"] == -32602


async def test_enum_and_literal_arguments_complete_by_prefix(mcp: McpHttp) -> None:
    params = {"ref": {"type": "ref/prompt", "name": "order"}, "argument": {"name": "size", "value": "sm"}}
    completion = (await mcp.stateless("completion/complete", params)).json()["result"]["completion"]
    assert completion == {"values": ["small", "smoky"], "total": 2, "hasMore": False}
    params["argument"] = {"name": "sugar", "value": ""}
    completion = (await mcp.stateless("completion/complete", params)).json()["result"]["completion"]
    assert completion["values"] == ["none", "some"]
    params["argument"] = {"name": "item", "value": "t"}
    assert (await mcp.stateless("completion/complete", params)).json()["result"]["completion"]["values"] == []


async def test_custom_completion_is_capped_at_100_values(mcp: McpHttp) -> None:
    params = {"ref": {"type": "ref/prompt", "name": "with_resource"}, "argument": {"name": "uri", "value": "a"}}
    completion = (await mcp.stateless("completion/complete", params)).json()["result"]["completion"]
    assert len(completion["values"]) == 100
    assert completion["total"] == 150 and completion["hasMore"] is True


async def test_completion_of_an_unknown_reference_is_invalid_params(mcp: McpHttp) -> None:
    params = {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}}
    assert (await mcp.stateless("completion/complete", params)).json()["error"]["code"] == -32602


async def test_a_failing_resource_or_prompt_is_an_internal_error_without_its_text() -> None:
    server = McpServer("failing")

    @server.resource("test://broken")
    def broken() -> str:
        raise KeyError("internal-table-name")

    @server.prompt()
    def broken_prompt() -> str:
        """Breaks."""
        raise ValueError("stack detail")

    async with client_for(server) as http:
        mcp = McpHttp(http)
        for method, params in (
            ("resources/read", {"uri": "test://broken"}),
            ("prompts/get", {"name": "broken_prompt"}),
        ):
            response = await mcp.stateless(method, params)
            assert response.status_code == 200
            error = response.json()["error"]
            assert error["code"] == -32603
            assert "internal error (reference " in error["message"]
            assert "internal-table-name" not in response.text and "stack detail" not in response.text
