"""What the gateway writes in the headers of a request to a 2026-07-28 upstream: `Mcp-Name` and `Mcp-Param-*`
mirror the body, a value that is not plain visible ASCII travels in the Base64 sentinel form, and nothing a client
sends (a resource URI or an argument with CR LF in it) can add a header. The upstream is a real Stratus server on
127.0.0.1 whose every request's headers, as uvicorn parsed them, are recorded."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Annotated, Any

import anyio
import httpx
import pytest
from pydantic import Field

from stratus import McpServer, Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.gateway.upstream_client import UpstreamClient
from stratus.protocol.header_values import decode_header_value, encode_header_value
from stratus.protocol.mirrored_headers import mirrored_headers, parameter_headers
from stratus.types import ASGIApp, Receive, Scope, Send
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
LOOPBACK = ("127.0.0.0/8",)
INJECTION = "\r\nX-Injected: 1"
MAX_RECORDED = 200


class HeaderRecorder:
    """An app that keeps the headers of every request it is sent (at most MAX_RECORDED), then serves it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests: list[list[tuple[str, str]]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and len(self.requests) < MAX_RECORDED:
            headers = scope["headers"]
            self.requests.append([(name.decode("latin-1"), value.decode("latin-1")) for name, value in headers])
        await self.app(scope, receive, send)

    def of(self, method: str) -> list[dict[str, str]]:
        """The headers of each request for `method`, by lower-case name."""
        return [dict(headers) for headers in self.requests if ("mcp-method", method) in headers]


def notes_server() -> McpServer:
    server = McpServer("notes")

    @server.resource("notes://{name}", mime_type="text/plain")
    def note(name: str) -> str:
        return f"note {name!r}"

    @server.tool()
    def where(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        return f"region {region!r}"

    return server


@pytest.fixture(scope="module")
def recorded() -> Iterator[tuple[str, HeaderRecorder]]:
    recorder = HeaderRecorder(build_app(notes_server(), Settings()))
    with uvicorn_serving(recorder) as url:
        yield f"{url}/mcp", recorder


def sentinel(value: str) -> str:
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


async def through_gateway(upstream_url: str, method: str, params: dict[str, Any]) -> httpx.Response:
    """The gateway's answer to one request of a handshake-era client (whose own request carries no Mcp-* header),
    the gateway talking to its upstream in the 2026-07-28 era."""
    gateway = GatewayServer([Upstream(name="notes", transport="http", url=upstream_url)], allowed_networks=LOOPBACK)
    with uvicorn_serving(build_app(gateway, Settings()), lifespan="on") as url, anyio.fail_after(15):
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            session = await McpHttp(http).initialize()
            return await session.request(method, params)


async def test_a_resource_uri_with_crlf_adds_no_header_upstream_and_is_read(
    recorded: tuple[str, HeaderRecorder],
) -> None:
    url, recorder = recorded
    uri = f"notes://a{INJECTION}"
    answer = await through_gateway(url, "resources/read", {"uri": uri})
    [headers] = recorder.of("resources/read")
    assert "x-injected" not in headers  # the URI did not end the Mcp-Name line
    assert headers["mcp-name"] == sentinel(uri)  # carried Base64-encoded, as the spec says
    assert answer.json()["result"]["contents"][0]["text"] == f"note {f'a{INJECTION}'!r}"  # and matched upstream


async def test_a_tools_x_mcp_header_argument_is_mirrored_encoded_when_it_must_be(
    recorded: tuple[str, HeaderRecorder],
) -> None:
    url, recorder = recorded
    region = f"Zürich{INJECTION}"
    answer = await through_gateway(url, "tools/call", {"name": "mcp__notes__where", "arguments": {"region": region}})
    headers = recorder.of("tools/call")[-1]
    assert "x-injected" not in headers
    assert headers.get("mcp-param-region") == sentinel(region)
    assert headers["mcp-name"] == "where"  # plain ASCII stays readable for intermediaries
    assert answer.json()["result"]["content"][0]["text"] == f"region {region!r}"  # the upstream saw them agree


async def test_a_call_whose_tool_was_not_listed_yet_learns_its_mirrored_parameters_and_is_sent_again(
    recorded: tuple[str, HeaderRecorder],
) -> None:
    """A container serving lists from the shared cache has never listed the upstream's tools itself: the
    upstream's `HeaderMismatch` makes the client list them and send the call once more, as the spec asks."""
    url, recorder = recorded
    client = UpstreamClient(Upstream(name="notes", transport="http", url=url), timeout=10)
    try:
        with anyio.fail_after(15):
            await client.connect()
            result = await client.call_tool("where", {"region": "eu-west-1"})
    finally:
        await client.close()
    assert result["content"][0]["text"] == "region 'eu-west-1'"
    assert recorder.of("tools/call")[-1]["mcp-param-region"] == "eu-west-1"


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        ("us-west1", "us-west1"),
        ("a b\tc", "a b\tc"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("a\r\nX-Injected: 1", "=?base64?YQ0KWC1JbmplY3RlZDogMQ==?="),
        ("a\x00b", "=?base64?YQBi?="),
    ],
)
def test_a_value_is_encoded_as_the_spec_says_and_decodes_to_itself(value: str, sent: str) -> None:
    assert encode_header_value(value) == sent  # the spec's own examples (Value Encoding), and control characters
    assert decode_header_value("Mcp-Param-X", sent) == value


def test_parameters_are_mirrored_by_their_properties_path_in_the_types_the_spec_allows() -> None:
    tool = {
        "name": "q",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "limit": {"type": "integer", "x-mcp-header": "Limit"},
                "dry": {"type": "boolean", "x-mcp-header": "Dry"},
                "where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
                "bad": {"type": "string", "x-mcp-header": "Bad\r\nX-Injected"},  # not a token: never a header
            },
        },
    }
    found = parameter_headers(tool)
    assert found == {("region",): "Region", ("limit",): "Limit", ("dry",): "Dry", ("where", "zone"): "Zone"}
    arguments = {"region": "eu", "limit": 5, "dry": False, "where": {"zone": "b"}, "bad": "x"}
    message = {"method": "tools/call", "params": {"name": "q", "arguments": arguments}}
    assert mirrored_headers(message, {"q": found}) == {
        "mcp-method": "tools/call",
        "mcp-name": "q",
        "mcp-param-region": "eu",
        "mcp-param-limit": "5",
        "mcp-param-dry": "false",
        "mcp-param-zone": "b",
    }
    absent = {"method": "tools/call", "params": {"name": "q", "arguments": {"region": None}}}
    assert mirrored_headers(absent, {"q": found}) == {"mcp-method": "tools/call", "mcp-name": "q"}
