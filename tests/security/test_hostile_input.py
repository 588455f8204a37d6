"""Hostile bodies: deep nesting, huge values, oversize bodies. Each answer is checked for its exact status and
code, and for leaking nothing."""

from __future__ import annotations

import json

import pytest

from stratus import Settings
from tests.fixtures.clients import client_for
from tests.fixtures.sample_server import server as sample
from tests.fixtures.wire import STATELESS, McpHttp, stateless_meta

pytestmark = pytest.mark.anyio
STATELESS_CALL = {"mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "add"}


def call_body(arguments: object) -> bytes:
    params = {"name": "add", "arguments": arguments, "_meta": stateless_meta()}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()


async def test_json_nested_deeper_than_the_parser_goes_is_a_parse_error_not_a_crash(mcp: McpHttp) -> None:
    response = await mcp.post(b"[" * 100_000 + b"]" * 100_000, STATELESS_CALL)
    assert response.status_code == 400
    assert response.json()["error"] == {"code": -32700, "message": "Parse error: the JSON is nested too deeply"}


async def test_huge_strings_and_arrays_in_arguments_are_refused_as_invalid_arguments(mcp: McpHttp) -> None:
    response = await mcp.post(call_body({"a": "9" * 3_000_000, "b": [1] * 200_000}), STATELESS_CALL)
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("Invalid arguments for tool 'add': ")
    assert len(response.content) < 1_000  # the huge input is not echoed back


async def test_deeply_nested_arguments_within_the_parser_limit_are_refused_cleanly(mcp: McpHttp) -> None:
    nested: dict[str, object] = {}
    inner = nested
    for _ in range(500):
        inner["x"] = {}
        inner = inner["x"]  # type: ignore[assignment]
    response = await mcp.post(call_body({"a": nested, "b": 2}), STATELESS_CALL)
    assert response.status_code == 200 and response.json()["result"]["isError"] is True


async def test_a_body_over_the_limit_is_413_before_it_is_parsed() -> None:
    async with client_for(sample, Settings(max_body_bytes=1024)) as http:
        response = await McpHttp(http).post(call_body({"a": "1" * 2048, "b": 2}), STATELESS_CALL)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == -32600


async def test_a_rest_call_with_an_empty_session_id_is_400_not_a_missing_header(mcp: McpHttp) -> None:
    body = json.dumps({"sessionId": "", "method": "tools/list"}).encode()
    response = await mcp.post(body, {"accept": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": -32600,
        "message": "Bad Request: a call needs non-empty sessionId and method strings, and params as an object if any",
    }
