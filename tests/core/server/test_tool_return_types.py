"""A tool's return type is held to its `outputSchema`: a type that cannot be described fails the registration
(naming the tool and the type) instead of every `tools/list`, and a value that breaks the schema is answered as a
tool error instead of being sent."""

from __future__ import annotations

import json
import socket
import warnings

import pytest
from pydantic import BaseModel

from stratus import McpServer
from stratus.server.signature import ToolReturnTypeError, ToolSignatureError
from tests.fixtures.clients import McpFactory
from tests.fixtures.fresh_interpreter import run_fresh
from tests.fixtures.wire import McpHttp

pytestmark = pytest.mark.anyio


class Reading(BaseModel):
    sensor: str
    value: float


def test_a_return_type_that_cannot_be_described_fails_the_registration_naming_tool_and_type() -> None:
    server = McpServer("bad", "1")
    with pytest.raises(ToolReturnTypeError) as caught:

        @server.tool()
        def connect(host: str) -> socket.socket:
            return socket.create_connection((host, 80))

    assert isinstance(caught.value, ToolSignatureError)
    assert (caught.value.tool, caught.value.parameter) == ("connect", "return")
    assert "socket.socket" in str(caught.value)
    assert server.tools == {}


def test_an_undescribable_return_type_registers_when_structured_output_is_off() -> None:
    server = McpServer("opt-out", "1")

    @server.tool(structured_output=False)
    def connect(host: str) -> socket.socket:
        return socket.create_connection((host, 80))

    assert "outputSchema" not in server.tools["connect"].definition()


def _server() -> McpServer:
    server = McpServer("returns", "1")

    @server.tool()
    def count() -> int:
        return "nope"  # type: ignore[return-value]

    @server.tool()
    def reading() -> Reading:
        return {"sensor": "t1", "value": "warm"}  # type: ignore[return-value]

    @server.tool()
    def totals() -> dict[str, int]:
        return {"a": 1, "b": 2}

    return server


@pytest.fixture
async def mcp(mcp_factory: McpFactory) -> McpHttp:
    return await mcp_factory(_server())


async def test_a_value_that_breaks_the_output_schema_is_a_tool_error_naming_the_expected_type(mcp: McpHttp) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pydantic's serializer warning would surface here
        result = (await mcp.stateless("tools/call", {"name": "count"})).json()["result"]
    assert result["isError"] is True
    assert "structuredContent" not in result
    text = result["content"][0]["text"]
    assert "result:" in text and "integer" in text
    assert "nope" not in text and "ValidationError" not in text


async def test_a_model_field_of_the_wrong_type_is_named_in_the_tool_error(mcp: McpHttp) -> None:
    result = (await mcp.stateless("tools/call", {"name": "reading"})).json()["result"]
    assert result["isError"] is True and "structuredContent" not in result
    text = result["content"][0]["text"]
    assert "value:" in text and "number" in text and "warm" not in text


async def test_a_value_that_fits_its_schema_is_sent_as_structured_content(mcp: McpHttp) -> None:
    result = (await mcp.stateless("tools/call", {"name": "totals"})).json()["result"]
    assert result.get("isError") is not True
    assert result["structuredContent"] == {"a": 1, "b": 2}


def test_a_tool_returning_json_scalars_in_lists_and_dicts_registers_without_importing_pydantic() -> None:
    """The registration check costs a cold start nothing for return types that are surely describable."""
    probe = (
        "import json, sys; from stratus import McpServer; server = McpServer('plain', '1')\n"
        "def names() -> list[str]: return []\n"
        "def totals() -> dict[str, int | None]: return {}\n"
        "server.tool(names); server.tool(totals)\n"
        "print(json.dumps(['pydantic' in sys.modules, sorted(server.tools)]))"
    )
    assert json.loads(run_fresh(probe)) == [False, ["names", "totals"]]
