"""What a client sees when the streaming function is throttled (its StreamingReservedConcurrency taken), at each of
its front doors: Lambda's own 429 at the Function URL, and at the REST API the 429 with Retry-After that the
template's INTEGRATION_FAILURE gateway response makes of what would otherwise be API Gateway's 500
(emulator/apigateway_rest.py; docs/deploy.md, "Throttles")."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import anyio
import httpx
import pytest

from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, VERSION, call_tool, initialize, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
STREAMING = "stratus-local-StreamingFunction"
WAIT_SECONDS = 30
_INIT = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "throttle-test", "version": "1"}}


def _without_gateway_responses(directory: Path) -> Path:
    """template.yaml as it was before the REST API's gateway response, its code where template.yaml's is."""
    text = TEMPLATE.read_text(encoding="utf-8").replace("CodeUri: .", f"CodeUri: {TEMPLATE.parent}")
    text, removed = re.subn(r"\n      GatewayResponses:\n(?:        .*\n)+", "\n", text)
    assert removed == 1
    path = directory / "no_gateway_responses.yaml"
    path.write_text(text, encoding="utf-8")
    return path


async def _refused_while_the_reservation_is_held(template: Path, door: str, release: Path) -> httpx.Response:
    """A request through `door` while the streaming function's one reserved container runs a held call."""
    with serving(template, parameters={"StreamingReservedConcurrency": "1"}) as aws:
        url = f"{aws.url('StreamingFunctionUrl')}/mcp"
        pool = aws.pools[STREAMING]
        with anyio.fail_after(WAIT_SECONDS):
            async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
                session = await initialize(http, url)
                served = len(pool.served)
                holding = asyncio.ensure_future(call_tool(http, url, session, "hold_until", {"path": str(release)}))
                while len(pool.served) == served:  # noqa: ASYNC110 - another thread's state, bounded by fail_after
                    await anyio.sleep(0.01)
                message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _INIT}
                refused = await http.post(f"{aws.url(door)}/mcp", json=message, headers=HEADERS)
                await anyio.Path(release).write_text("go")
                await holding
        assert len(pool.served) == served + 1  # the refused request never ran
    return refused


async def test_a_throttled_request_through_the_rest_api_gets_429_with_retry_after(tmp_path: Path) -> None:
    refused = await _refused_while_the_reservation_is_held(TEMPLATE, "StreamingRestApi", tmp_path / "release")
    assert refused.status_code == 429, refused.text
    assert refused.headers["retry-after"] == "1"


async def test_defect_pinned_without_the_gateway_response_the_rest_api_answers_a_throttle_with_500(
    tmp_path: Path,
) -> None:
    template = _without_gateway_responses(tmp_path)
    refused = await _refused_while_the_reservation_is_held(template, "StreamingRestApi", tmp_path / "release")
    assert (refused.status_code, refused.json()) == (500, {"message": "Internal server error"})
    assert "retry-after" not in refused.headers


async def test_a_throttled_request_through_the_function_url_gets_lambdas_429(tmp_path: Path) -> None:
    refused = await _refused_while_the_reservation_is_held(TEMPLATE, "StreamingFunctionUrl", tmp_path / "release")
    assert refused.status_code == 429
    assert refused.headers["x-amzn-errortype"] == "TooManyRequestsException"
