"""Helpers of the emulator tests: the stack a template describes, served on 127.0.0.1 with the probe app and the
real Redis, and a small MCP client (legacy handshake; JSON or SSE answers)."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from handlers.emulator.local import LocalAws, Options
from handlers.emulator.stack import read_stack

TEMPLATE = Path(__file__).parents[2] / "template.yaml"
BEFORE_FIXES = Path(__file__).parent / "templates" / "before_fixes.yaml"
"""template.yaml as it was before the Function URL permissions and the OAuth discovery routes were added."""
JWT_PARAMETERS = {
    "AuthMode": "jwt",
    "AuthIssuer": "https://issuer.example",
    "AuthAudience": "https://mcp.example/mcp",
    "AuthJwksUrl": "https://issuer.example/jwks.json",
}
VERSION = "2025-11-25"
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@contextmanager
def serving(
    template: Path,
    *,
    parameters: Mapping[str, str] | None = None,
    containers: int = 2,
    retire_rate: float = 0.0,
    seed: int = 11,
) -> Iterator[LocalAws]:
    """The stack `template` describes, served until the block ends, its state in the real Redis (a fresh prefix)."""
    environment = {
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"emulator-{uuid.uuid4().hex[:12]}",
        "STRATUS_SECRET_KEY": "emulator-tests",
        "STRATUS_APP": "tests.emulator.apps:probe",
    }
    with tempfile.TemporaryFile() as output:
        options = Options(
            containers=containers, retire_rate=retire_rate, seed=seed, environment=environment, output=output
        )
        with LocalAws(read_stack(template, parameters), options).running() as aws:
            yield aws


def read_answer(response: httpx.Response, request_id: int) -> dict[str, Any]:
    """The JSON-RPC response with `request_id`, from a JSON body or from the SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:") and line[5:].strip():  # a priming event's data is empty
                message = json.loads(line[5:])
                if message.get("id") == request_id:
                    return dict(message)
        raise AssertionError(f"no answer to {request_id} in the stream: {response.text[:500]}")
    return dict(response.json())


async def initialize(http: httpx.AsyncClient, url: str) -> str:
    """A legacy session; its id."""
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "emulator-test", "version": "1"}}
    response = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=HEADERS
    )
    assert response.status_code == 200, response.text
    assert read_answer(response, 0)["result"]["protocolVersion"] == VERSION
    return response.headers["mcp-session-id"]


async def call_tool(
    http: httpx.AsyncClient, url: str, session: str, name: str, arguments: dict[str, Any], *, progress: bool = False
) -> tuple[Any, httpx.Response]:
    """The tool's structured result, and the HTTP response that carried it."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": "p"}
    response = await http.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
        headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": VERSION},
    )
    assert response.status_code == 200, response.text
    answer = read_answer(response, 1)
    assert "result" in answer, answer
    return answer["result"]["structuredContent"]["result"], response
