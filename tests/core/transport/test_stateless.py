"""The 2026-07-28 wire: stateless requests, `_meta`, mirrored headers and their error codes."""

from __future__ import annotations

import base64

import pytest

from tests.fixtures.wire import STATELESS, McpHttp, stateless_meta

pytestmark = pytest.mark.anyio


async def test_discover_lists_every_supported_version_and_only_implemented_capabilities(mcp: McpHttp) -> None:
    response = await mcp.stateless("server/discover")
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["supportedVersions"] == ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
    assert result["capabilities"] == {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "completions": {},
    }
    assert result["resultType"] == "complete"
    assert result["cacheScope"] == "public" and result["ttlMs"] >= 0
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "stratus-sample"


async def test_tools_call_returns_structured_content_and_text(mcp: McpHttp) -> None:
    response = await mcp.stateless("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["structuredContent"] == {"result": 42}
    assert result["content"] == [{"type": "text", "text": '{"result":42}'}]
    assert "isError" not in result


async def test_cacheable_lists_carry_ttl_and_scope(mcp: McpHttp) -> None:
    for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
        result = (await mcp.stateless(method)).json()["result"]
        assert result["resultType"] == "complete"
        assert isinstance(result["ttlMs"], int) and result["cacheScope"] == "public", method


async def test_wrong_argument_type_is_an_is_error_result_naming_the_field(mcp: McpHttp) -> None:
    response = await mcp.stateless("tools/call", {"name": "add", "arguments": {"a": "one", "b": 2}})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Invalid arguments for tool 'add': a: ")


async def test_missing_required_argument_is_an_is_error_result(mcp: McpHttp) -> None:
    result = (await mcp.stateless("tools/call", {"name": "add", "arguments": {"a": 1}})).json()["result"]
    assert result["isError"] is True
    assert "b: Field required" in result["content"][0]["text"]


async def test_unknown_tool_is_invalid_params_never_http_404(mcp: McpHttp) -> None:
    response = await mcp.stateless("tools/call", {"name": "nope", "arguments": {}})
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32602


async def test_unknown_method_is_http_404_with_method_not_found(mcp: McpHttp) -> None:
    response = await mcp.stateless("tools/frobnicate")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == -32601
    assert response.json()["id"] == 1


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe"])
async def test_handshake_era_methods_are_not_found_on_the_stateless_wire(mcp: McpHttp, method: str) -> None:
    response = await mcp.stateless(method)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == -32601


async def test_missing_client_capabilities_is_http_400_invalid_params(mcp: McpHttp) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": STATELESS}
    response = await mcp.stateless("tools/list", {"_meta": meta})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32602


async def test_unsupported_version_is_400_with_the_supported_list(mcp: McpHttp) -> None:
    meta = stateless_meta(**{"io.modelcontextprotocol/protocolVersion": "v999.0.0"})
    response = await mcp.stateless("tools/list", {"_meta": meta}, headers={"mcp-protocol-version": "v999.0.0"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32022
    assert error["data"] == {
        "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
        "requested": "v999.0.0",
    }


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({"mcp-method": "tools/list"}, "method header names another method"),
        ({"mcp-name": "divide"}, "name header names another tool"),
        ({"mcp-protocol-version": "2025-11-25"}, "version header disagrees with _meta"),
        ({"mcp-name": "=?base64?ZGl2aWRl?="}, "base64 name decodes to another tool"),
        ({"mcp-name": "=?base64?not base64?="}, "sentinel around invalid base64"),
    ],
)
async def test_mismatched_mirrored_headers_are_rejected_with_header_mismatch(
    mcp: McpHttp, headers: dict[str, str], why: str
) -> None:
    response = await mcp.stateless("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, headers=headers)
    assert response.status_code == 400, why
    assert response.json()["error"]["code"] == -32020, why


async def test_base64_encoded_name_header_is_decoded_before_comparison(mcp: McpHttp) -> None:
    encoded = "=?base64?" + base64.b64encode(b"add").decode() + "?="
    response = await mcp.stateless(
        "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, headers={"mcp-name": encoded}
    )
    assert response.status_code == 200
    assert response.json()["result"]["structuredContent"] == {"result": 3}


async def test_missing_method_header_is_header_mismatch(mcp: McpHttp) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": stateless_meta()}}
    response = await mcp.post(body, {"mcp-protocol-version": STATELESS})
    assert response.status_code == 400
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32020, "message": "Header mismatch: required header mcp-method is missing"},
    }


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
async def test_get_and_delete_answer_405_allowing_post(mcp: McpHttp, verb: str) -> None:
    response = await mcp.http.request(verb, "/mcp", headers={"mcp-protocol-version": STATELESS})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


async def test_session_header_is_ignored_and_never_minted(mcp: McpHttp) -> None:
    response = await mcp.stateless("tools/list", headers={"mcp-session-id": "made-up"})
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers


async def test_resource_read_of_unknown_uri_is_invalid_params_with_the_uri(mcp: McpHttp) -> None:
    response = await mcp.stateless("resources/read", {"uri": "sample://missing"})
    assert response.status_code == 200
    assert response.json()["error"] == {
        "code": -32602,
        "message": "Resource not found: sample://missing",
        "data": {"uri": "sample://missing"},
    }


async def test_template_read_is_private_and_cacheable(mcp: McpHttp) -> None:
    response = await mcp.stateless("resources/read", {"uri": "sample://cities/Rome/population"})
    result = response.json()["result"]
    assert result["contents"] == [
        {
            "uri": "sample://cities/Rome/population",
            "text": '{"city": "Rome", "population": 400000}',
            "mimeType": "application/json",
        }
    ]
    assert result["cacheScope"] == "private"


async def test_a_notification_is_accepted_with_202_and_no_body(mcp: McpHttp) -> None:
    body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": stateless_meta()}}
    response = await mcp.post(body, {"mcp-protocol-version": STATELESS, "mcp-method": "notifications/cancelled"})
    assert response.status_code == 202
    assert response.content == b""
