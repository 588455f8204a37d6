"""A tool running past each front door's limit, through the emulated stack, and what the client sees. The emulator
scales every AWS time limit (Options.time_scale) and Stratus's own stream timings with it, so each figure below is
AWS's, reached in a fraction of the time:

- HTTP API (buffered function, `Timeout: 29`; integration 30 s): Stratus bounds the call by Lambda's remaining time
  less its 0.5 s margin, so the client gets HTTP 200 with JSON-RPC error -31504 at 28.5 s, before the function's
  timeout (29 s, which would be API Gateway's 500) and the API's (30 s, its 503);
- REST API, streaming (idle limit 5 minutes): a call silent for 6 minutes answers on an SSE stream kept alive by
  comments, and the result arrives;
- Function URL and REST API, streaming (the function's `Timeout: 900`): a handshake-era call's SSE stream of
  keep-alive comments ends at 14 minutes (STRATUS_MAX_STREAM_SECONDS), before Lambda's stop at 15, with no answer
  but with its priming event's id (2025-11-25), which the client resumes from with `Last-Event-ID`.

Under load (a shared machine, two containers per function, moto) every step may take longer than it would alone, so
each duration is checked strictly on the side a timer decides (a cut never comes early) and with LOAD_SLACK_SECONDS
of real time allowed on the other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import anyio
import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import HEADERS, STORES, TEMPLATE, initialize, read_answer, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
APP = "tests.fixtures.slow_app:slow"
BUFFERED_SCALE = 1 / 10
"""The HTTP API's 30 s in 3 s; the buffered function's 29 s in 2.9 s."""
STREAMING_SCALE = 1 / 150
"""The REST API's 5-minute idle limit in 2 s; the streaming function's 15 minutes in 6 s. (At 1/300 a keep-alive
every 0.3 s against a 1 s idle limit, and 0.2 s between Stratus's cut and Lambda's, did not survive load.)"""
LOAD_SLACK_SECONDS = 2.0
"""Real time allowed past a figure for a loaded machine (never before it)."""
MINUTE = 60.0
DEADLINE_MARGIN = 0.5
"""What Stratus keeps back from Lambda's remaining time (ServerPolicy.deadline_margin; not scaled)."""


def _stratus_timings(scale: float) -> dict[str, str]:
    """Stratus's stream cut (14 minutes) on the same scale as AWS's limits, and its keep-alive interval under a third of
    the REST API's idle limit (scaled, 15 s would be 0.1 s: less than a first call on a fresh container takes)."""
    return {"STRATUS_KEEPALIVE_SECONDS": str(90 * scale), "STRATUS_MAX_STREAM_SECONDS": str(840 * scale)}


def _scaled_stack(store: str, scale: float) -> AbstractContextManager[LocalAws]:
    """The stack with AWS's time limits and Stratus's stream timings scaled alike."""
    return serving(TEMPLATE, store=store, app=APP, environment=_stratus_timings(scale), time_scale=scale)


@pytest.fixture(scope="module", params=STORES)
def store(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def buffered(store: str) -> Iterator[LocalAws]:
    with _scaled_stack(store, BUFFERED_SCALE) as aws:
        yield aws


@pytest.fixture(scope="module")
def streaming(store: str) -> Iterator[LocalAws]:
    with _scaled_stack(store, STREAMING_SCALE) as aws:
        yield aws


async def _warm_session(http: httpx.AsyncClient, url: str) -> str:
    """A handshake session, asked for as a client does (JSON or SSE accepted): an initialize slower than the scaled
    keep-alive interval (a fresh container, moto's DynamoDB) still answers JSON, with its Mcp-Session-Id."""
    return await initialize(http, url)


async def _sleep(http: httpx.AsyncClient, url: str, session: str, seconds: float) -> tuple[httpx.Response, float]:
    """tools/call of `sleep`, and how long the answer took (in real seconds)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "sleep", "arguments": {}}}
    body["params"]["arguments"] = {"seconds": seconds}  # type: ignore[index]
    started = time.monotonic()
    response = await http.post(url, json=body, headers={**HEADERS, "mcp-session-id": session})
    return response, time.monotonic() - started


async def test_past_the_http_api_limit_stratus_answers_a_json_rpc_timeout_before_the_functions_own(
    buffered: LocalAws,
) -> None:
    url = f"{buffered.url('ServerlessHttpApi')}/mcp"
    async with httpx.AsyncClient(timeout=30) as http:
        session = await initialize(http, url)  # the container is warm: its cold start is not in the call's time
        quick, _ = await _sleep(http, url, session, 0)
        assert read_answer(quick, 1)["result"]["structuredContent"] == {"result": 0}
        with anyio.fail_after(20):
            refused, took = await _sleep(http, url, session, 40 * BUFFERED_SCALE)
    assert refused.status_code == 200
    assert read_answer(refused, 1)["error"] == {
        "code": -31504,
        "message": "'sleep' did not finish within its time limit",
    }
    # Stratus answers DEADLINE_MARGIN (real) seconds before the function's 29 s: never earlier. That it answered at
    # all (200 and -31504, not API Gateway's 500 or 503) shows it beat the function's timeout and the API's.
    assert 29 * BUFFERED_SCALE - DEADLINE_MARGIN - 0.1 <= took < 30 * BUFFERED_SCALE + LOAD_SLACK_SECONDS


def _comments_and_answer(response: httpx.Response) -> tuple[int, dict[str, Any] | None]:
    comments, answer = 0, None
    for line in response.text.splitlines():
        if line.startswith(":"):
            comments += 1
        elif line.startswith("data:") and line[5:].strip():  # a priming event's data is empty
            message = json.loads(line[5:])
            if message.get("id") == 1:
                answer = message
    return comments, answer


async def test_a_call_silent_past_the_rest_apis_idle_limit_is_kept_alive_and_answers(streaming: LocalAws) -> None:
    url = f"{streaming.url('StreamingRestApi')}/mcp"
    silent = 6 * MINUTE * STREAMING_SCALE
    async with httpx.AsyncClient(timeout=30) as http:
        session = await _warm_session(http, url)
        with anyio.fail_after(20):
            response, took = await _sleep(http, url, session, silent)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    comments, answer = _comments_and_answer(response)
    assert comments >= 2
    assert answer is not None and answer["result"]["structuredContent"] == {"result": silent}
    assert took >= silent


@pytest.mark.parametrize("door", ["StreamingFunctionUrl", "StreamingRestApi"])
async def test_before_the_streaming_functions_timeout_a_handshake_call_stream_ends_resumable(
    streaming: LocalAws, door: str
) -> None:
    url = f"{streaming.url(door)}/mcp"
    async with httpx.AsyncClient(timeout=30) as http:
        session = await _warm_session(http, url)
        with anyio.fail_after(20):
            response, took = await _sleep(http, url, session, 20 * MINUTE * STREAMING_SCALE)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    comments, answer = _comments_and_answer(response)
    assert comments >= 2 and answer is None
    ids = [line.removeprefix("id:").strip() for line in response.text.splitlines() if line.startswith("id:")]
    assert len(ids) == 1 and ids[0].endswith("-0"), response.text  # the priming event: where the client resumes
    # Stratus's 14-minute cut, never earlier; before Lambda's stop at 15 but for a loaded machine's delays.
    assert 14 * MINUTE * STREAMING_SCALE <= took < 15 * MINUTE * STREAMING_SCALE + LOAD_SLACK_SECONDS
