"""Mcp-Param-* headers mirrored from `x-mcp-header` tool parameters, and capability requirements (-32021)."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

from stratus import Context, McpServer
from tests.fixtures.clients import McpFactory
from tests.fixtures.wire import McpHttp, stateless_meta

pytestmark = pytest.mark.anyio


def make_server() -> McpServer:
    server = McpServer("params-test")

    @server.tool()
    def query(
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
        limit: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Limit"})] = 10,
        sql: str = "",
    ) -> str:
        """Run a query in a region."""
        return f"{region}:{limit}"

    @server.tool()
    async def summarize(text: str, ctx: Context) -> str:
        """Summarize with the client's model."""
        await ctx.create_message([{"role": "user", "content": {"type": "text", "text": text}}], max_tokens=50)
        return "unreachable on a JSON-only response"

    return server


@pytest.fixture
async def mcp(mcp_factory: McpFactory) -> McpHttp:
    return await mcp_factory(make_server())


async def call(mcp: McpHttp, arguments: dict[str, object], headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    response = await mcp.stateless("tools/call", {"name": "query", "arguments": arguments}, headers=headers)
    return response.status_code, response.json()


async def test_matching_parameter_headers_are_accepted(mcp: McpHttp) -> None:
    status, body = await call(
        mcp, {"region": "us-west1", "limit": 5}, {"mcp-param-region": "us-west1", "mcp-param-limit": "5.0"}
    )
    assert status == 200
    assert body["result"]["content"] == [{"type": "text", "text": "us-west1:5"}]  # type: ignore[index]


async def test_base64_parameter_header_is_decoded(mcp: McpHttp) -> None:
    status, _ = await call(mcp, {"region": "Zürich"}, {"mcp-param-region": "=?base64?WsO8cmljaA==?="})
    assert status == 200


async def test_an_absent_argument_needs_no_header(mcp: McpHttp) -> None:
    status, _ = await call(mcp, {"region": "eu"}, {"mcp-param-region": "eu"})
    assert status == 200


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        ({"region": "us-west1"}, {}),
        ({"region": "us-west1"}, {"mcp-param-region": "eu-west1"}),
        ({"region": "eu", "limit": 5}, {"mcp-param-region": "eu", "mcp-param-limit": "6"}),
        ({"region": "eu", "limit": 5}, {"mcp-param-region": "eu", "mcp-param-limit": "five"}),
        ({"region": "a\x7fb"}, {"mcp-param-region": "a\x7fb"}),
    ],
)
async def test_missing_mismatched_or_invalid_parameter_headers_are_header_mismatch(
    mcp: McpHttp, arguments: dict[str, object], headers: dict[str, str]
) -> None:
    status, body = await call(mcp, arguments, headers)
    assert status == 400
    assert body["error"]["code"] == -32020  # type: ignore[index]


async def test_the_x_mcp_header_annotation_is_in_the_input_schema(mcp: McpHttp) -> None:
    tools = (await mcp.stateless("tools/list")).json()["result"]["tools"]
    assert tools[0]["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"


async def test_sampling_without_the_client_capability_is_400_missing_capability(mcp: McpHttp) -> None:
    response = await mcp.stateless("tools/call", {"name": "summarize", "arguments": {"text": "long"}})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": -32021,
        "message": "Missing required client capability: sampling",
        "data": {"requiredCapabilities": {"sampling": {}}},
    }


async def test_sampling_with_the_capability_asks_through_an_input_required_result(mcp: McpHttp) -> None:
    meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": {"sampling": {}}})
    response = await mcp.stateless("tools/call", {"name": "summarize", "arguments": {"text": "long"}, "_meta": meta})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {
        "sample-1": {
            "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "long"}}], "maxTokens": 50},
        }
    }
    assert isinstance(result["requestState"], str)


@pytest.mark.parametrize(
    ("arguments", "header"),
    [
        ({"region": "eu"}, "=?base64?ZXUNClgtSW5qZWN0ZWQ6IDE=?="),  # "eu\r\nX-Injected: 1": not the argument
        ({"region": "eu"}, "=?base64?not base64!?="),
        ({"region": "eu"}, "=?base64?ZXU?"),  # an unterminated sentinel is a literal, and not "eu"
        ({"region": "eu"}, "=?base64?//79?="),  # bytes that are not UTF-8
    ],
)
async def test_a_forged_or_smuggling_base64_sentinel_is_header_mismatch(
    mcp: McpHttp, arguments: dict[str, object], header: str
) -> None:
    status, body = await call(mcp, arguments, {"mcp-param-region": header})
    assert status == 400
    assert body["error"]["code"] == -32020  # type: ignore[index]


async def test_a_sentinel_carrying_line_breaks_matches_only_its_argument_and_is_never_reflected(mcp: McpHttp) -> None:
    smuggled = "eu\r\nX-Injected: 1"
    response = await mcp.stateless(
        "tools/call",
        {"name": "query", "arguments": {"region": smuggled}},
        headers={"mcp-param-region": "=?base64?ZXUNClgtSW5qZWN0ZWQ6IDE=?="},
    )
    assert response.status_code == 200  # the value is compared, as the spec asks; it goes nowhere else
    assert "x-injected" not in response.headers
    assert all("\r" not in value and "\n" not in value for value in response.headers.values())


async def test_integer_parameter_headers_are_compared_exactly_beyond_float_precision(mcp: McpHttp) -> None:
    # 2**53 and 2**53 + 1 are the same float: compared as floats, the header would match another argument.
    status, body = await call(
        mcp,
        {"region": "eu", "limit": 9007199254740993},
        {"mcp-param-region": "eu", "mcp-param-limit": "9007199254740992"},
    )
    assert status == 400
    assert body["error"]["code"] == -32020  # type: ignore[index]


@pytest.mark.parametrize("header", ["9007199254740993", "9007199254740993.0", "9.007199254740993e15"])
async def test_an_integer_parameter_header_equal_to_its_argument_is_accepted(mcp: McpHttp, header: str) -> None:
    status, _ = await call(
        mcp, {"region": "eu", "limit": 9007199254740993}, {"mcp-param-region": "eu", "mcp-param-limit": header}
    )
    assert status == 200


@pytest.mark.parametrize("header", ["NaN", "Infinity", "5_0", "0x32", "5e9999999999999999999999"])
async def test_a_parameter_header_that_is_not_a_decimal_number_does_not_match_an_integer(
    mcp: McpHttp, header: str
) -> None:
    status, body = await call(mcp, {"region": "eu", "limit": 50}, {"mcp-param-region": "eu", "mcp-param-limit": header})
    assert status == 400
    assert body["error"]["code"] == -32020  # type: ignore[index]


async def test_an_integer_argument_sent_as_a_float_matches_its_integer_header(mcp: McpHttp) -> None:
    status, _ = await call(mcp, {"region": "eu", "limit": 50.0}, {"mcp-param-region": "eu", "mcp-param-limit": "50"})
    assert status == 200
