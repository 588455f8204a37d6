"""A tool whose result is past what a buffered front door returns (Lambda's 6 MB response payload): through the
emulated HTTP API and a `BUFFERED` Function URL the client gets Stratus's JSON-RPC error naming the setting, not
the front door's bare 5xx; the streaming Function URL returns the whole result."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, VERSION, initialize, read_answer, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
PAST_LIMIT = 6 * 1024 * 1024
"""Lambda's synchronous response payload (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)."""
BUFFERED_URL = """    Properties:
      FunctionUrlConfig:
        AuthType: NONE
        InvokeMode: BUFFERED
"""


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalAws]:
    """template.yaml with a `BUFFERED` Function URL on the buffered function as well as its HTTP API."""
    template = TEMPLATE.read_text(encoding="utf-8")
    head, marker, tail = template.partition("  BufferedFunction:\n    Type: AWS::Serverless::Function\n")
    assert marker, "template.yaml no longer declares BufferedFunction as this test expects"
    properties = tail.index("    Properties:\n")
    tail = tail[:properties] + BUFFERED_URL + tail[properties + len("    Properties:\n") :]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "template.yaml"
        # The code stays where template.yaml has it.
        text = (head + marker + tail).replace("CodeUri: .\n", f"CodeUri: {TEMPLATE.parent}\n")
        path.write_text(text, encoding="utf-8")
        with serving(path, containers=1) as aws:
            yield aws


async def _call_blob(url: str, size: int) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60) as http:
        session = await initialize(http, url)
        return await http.post(
            url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "blob", "arguments": {"size": size}},
            },
            headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": VERSION},
        )


@pytest.mark.parametrize("door", ["ServerlessHttpApi", "BufferedFunctionUrl"])
async def test_a_result_past_6_mb_through_a_buffered_door_is_a_json_rpc_error_not_a_gateway_5xx(
    stack: LocalAws, door: str
) -> None:
    response = await _call_blob(f"{stack.url(door)}/mcp", PAST_LIMIT)
    assert response.status_code == 200, response.text[:300]
    error = read_answer(response, 1)["error"]
    assert error["code"] == -32603
    assert error["data"]["setting"] == "STRATUS_MAX_RESPONSE_BYTES"
    assert "streaming" in error["message"]


async def test_the_same_result_through_the_streaming_function_url_arrives_whole(stack: LocalAws) -> None:
    response = await _call_blob(f"{stack.url('StreamingFunctionUrl')}/mcp", PAST_LIMIT)
    assert response.status_code == 200
    assert read_answer(response, 1)["result"]["content"][0]["text"] == "x" * PAST_LIMIT
