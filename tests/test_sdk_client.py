"""The official MCP SDK client (`mcp` 2.x) against Stratus over real HTTP, in both protocol eras.

A uvicorn server on 127.0.0.1 (an ephemeral port) serves the tests' sample server. Each test connects a fresh SDK
`Client` to it twice, once per era:

- 2026-07-28: `mode="auto"`, so the SDK probes `server/discover` and adopts the modern, stateless wire
  (`_meta` envelope and `Mcp-Method` / `Mcp-Name` headers on every request);
- 2025-11-25: `mode="legacy"`, so the SDK runs the `initialize` handshake and carries `Mcp-Session-Id`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import pytest
from mcp import Client
from mcp.client.client import ConnectMode
from mcp_types import PromptReference, TextContent, TextResourceContents

from stratus import Settings, build_app
from tests.fixtures.sample_server import server as sample_server
from tests.fixtures.servers import uvicorn_serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

TEST_TIMEOUT_SECONDS = 10.0
REQUEST_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Era:
    """How the SDK client is told to connect, and the protocol version that must come out of it."""

    mode: ConnectMode
    protocol_version: str


STATELESS = Era(mode="auto", protocol_version="2026-07-28")
HANDSHAKE = Era(mode="legacy", protocol_version="2025-11-25")


@pytest.fixture(scope="module")
def stratus_url() -> Iterator[str]:
    """The MCP endpoint of the tests' sample server, served by uvicorn in a background thread."""
    with uvicorn_serving(build_app(sample_server, Settings())) as base_url:
        yield f"{base_url}/mcp"


@pytest.fixture(params=[STATELESS, HANDSHAKE], ids=lambda era: era.protocol_version)
def era(request: pytest.FixtureRequest) -> Era:
    value = request.param
    assert isinstance(value, Era)
    return value


@asynccontextmanager
async def connect(url: str, era: Era) -> AsyncIterator[Client]:
    """An SDK client connected to `url` in `era`, checked to have negotiated that era's version."""
    async with Client(url, mode=era.mode, read_timeout_seconds=REQUEST_TIMEOUT_SECONDS) as client:
        assert client.protocol_version == era.protocol_version
        yield client


async def test_the_sdk_client_negotiates_each_era_through_its_own_handshake(stratus_url: str, era: Era) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(stratus_url, era) as client:
            session = client.session
            if era is STATELESS:
                assert session.discover_result is not None
                assert "2026-07-28" in session.discover_result.supported_versions
                assert session.initialize_result is None
            else:
                assert session.initialize_result is not None
                assert session.discover_result is None
            assert client.server_info is not None
            assert (client.server_info.name, client.server_info.version) == ("stratus-sample", "1.0.0")
            assert client.instructions == sample_server.instructions
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.resources is not None
            assert client.server_capabilities.prompts is not None


async def test_listing_tools_returns_add_forecast_and_divide(stratus_url: str, era: Era) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(stratus_url, era) as client:
            listing = await client.list_tools()
    assert listing.next_cursor is None
    assert [tool.name for tool in listing.tools] == ["add", "forecast", "divide"]
    add = listing.tools[0]
    assert add.description is not None
    assert add.description.startswith("Add two integers.")
    assert add.input_schema["required"] == ["a", "b"]
    assert add.input_schema["properties"]["a"]["type"] == "integer"


async def test_calling_add_returns_the_sum_as_json_text_and_structured_content(stratus_url: str, era: Era) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(stratus_url, era) as client:
            result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.is_error is False
    assert result.content == [TextContent(type="text", text='{"result":5}')]
    assert result.structured_content == {"result": 5}


async def test_dividing_by_zero_is_a_tool_error_result_not_a_protocol_error(stratus_url: str, era: Era) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(stratus_url, era) as client:
            result = await client.call_tool("divide", {"numerator": 1, "denominator": 0})
    assert result.is_error is True
    assert result.content == [TextContent(type="text", text="Cannot divide by zero")]
    assert result.structured_content is None


async def test_reading_the_welcome_note_returns_its_markdown(stratus_url: str, era: Era) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(stratus_url, era) as client:
            result = await client.read_resource("sample://notes/welcome")
    assert result.contents == [
        TextResourceContents(
            uri="sample://notes/welcome",
            mime_type="text/markdown",
            text="# Welcome\n\nThis server runs on Stratus.",
        )
    ]


async def test_reading_a_city_through_the_population_template_returns_its_json(stratus_url: str, era: Era) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(stratus_url, era) as client:
            result = await client.read_resource("sample://cities/Rome/population")
    assert result.contents == [
        TextResourceContents(
            uri="sample://cities/Rome/population",
            mime_type="application/json",
            text='{"city": "Rome", "population": 400000}',
        )
    ]


async def test_listing_resource_templates_returns_the_city_population_template(stratus_url: str, era: Era) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(stratus_url, era) as client:
            listing = await client.list_resource_templates()
    assert listing.next_cursor is None
    assert [(item.name, item.uri_template, item.mime_type) for item in listing.resource_templates] == [
        ("population", "sample://cities/{city}/population", "application/json")
    ]
    assert listing.resource_templates[0].description == "A made-up population figure for a city."


async def test_getting_the_greeting_prompt_renders_one_user_message(stratus_url: str, era: Era) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(stratus_url, era) as client:
            result = await client.get_prompt("greeting", {"name": "Ada", "style": "fahrenheit"})
    assert result.description == "Greet someone and tell them tomorrow's weather."
    assert [(message.role, message.content) for message in result.messages] == [
        ("user", TextContent(type="text", text="Say hello to Ada and mention tomorrow's weather in fahrenheit."))
    ]


async def test_completing_the_greeting_style_from_c_suggests_only_celsius(stratus_url: str, era: Era) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with connect(stratus_url, era) as client:
            result = await client.complete(
                PromptReference(type="ref/prompt", name="greeting"), {"name": "style", "value": "c"}
            )
    assert result.completion.values == ["celsius"]
    assert result.completion.has_more is not True


async def test_a_client_pinned_to_2026_07_28_without_a_discover_probe_can_call_tools(stratus_url: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT_SECONDS):
        async with Client(stratus_url, mode="2026-07-28", read_timeout_seconds=REQUEST_TIMEOUT_SECONDS) as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("add", {"a": 40, "b": 2})
    assert result.is_error is False
    assert result.structured_content == {"result": 42}
