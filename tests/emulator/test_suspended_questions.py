"""A handshake-era call that asks its client something, through `stratus local` (two containers per function): the
question suspends the call instead of holding an invocation. Its stream carries the question and ends; the client's
answer, POSTed to any container, starts the call again in the task worker; the client polls for the rest. Nothing
runs while the person thinks, or after a client that leaves without answering."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, VERSION, serving
from tests.fixtures.streams import poll_for_response
from tests.fixtures.wire import sse_fields

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
STREAMING = "stratus-local-StreamingFunction"
BUFFERED = "stratus-local-BufferedFunction"
WORKER = "stratus-local-TaskWorkerFunction"
DOORS = {"StreamingFunctionUrl": STREAMING, "ServerlessHttpApi": BUFFERED}
THINK_SECONDS = float(os.environ.get("STRATUS_THINK_SECONDS", "3"))
"""How long the client's person takes to answer: 3 s in CI; `STRATUS_THINK_SECONDS=60` measures the minute
docs/benchmarks.md cites. A bill measured among the `slow` tests (nice 19, beside the unit tests) measures the CPU
starvation, not the code: it runs with the unit tests or by hand."""


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE, app="tests.fixtures.apps:shared") as aws:
        yield aws


async def _session(http: httpx.AsyncClient, url: str) -> dict[str, str]:
    params = {"protocolVersion": VERSION, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t"}}
    opened = await http.post(
        url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=HEADERS
    )
    assert opened.status_code == 200, opened.text
    return {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": VERSION}


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(5):
        while not condition():  # noqa: ASYNC110 - the emulator's state, on its own thread; bounded by fail_after
            await anyio.sleep(0.01)


def _messages(body: str) -> list[tuple[str, dict[str, Any]]]:
    return [(event.get("id", ""), json.loads(event["data"])) for event in sse_fields(body) if event.get("data")]


@pytest.mark.parametrize("door", DOORS)
async def test_a_question_ends_the_call_s_invocations_and_the_answer_resumes_it_in_the_task_worker(
    stack: LocalAws, door: str
) -> None:
    url, worker = f"{stack.url(door)}/mcp", stack.pools[WORKER]
    async with httpx.AsyncClient(timeout=30) as http:
        headers = await _session(http, url)
        asked = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ask_user"}},
            headers=headers,
        )
        assert asked.status_code == 200 and asked.headers["content-type"] == "text/event-stream"
        (place, question), *_ = [(event_id, m) for event_id, m in _messages(asked.text) if "method" in m] or [("", {})]
        assert question["method"] == "elicitation/create" and question["id"].startswith("stratus-call:")
        assert all("result" not in message for _, message in _messages(asked.text))  # the stream ended without one
        # The client has the question, and nothing runs for the call: every invocation ends (within the time it takes
        # to finish one once its response is sent), and none is in flight.
        await _until(lambda: all(pool.busy == 0 for pool in stack.pools.values()))
        runs = len(worker.served)

        answer = {"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
        assert (await http.post(url, json=answer, headers=headers)).status_code == 202
        last = [event["id"] for event in sse_fields(asked.text) if event.get("id")][-1]
        result = await poll_for_response(http, url, headers, last, 7)
    assert place
    assert result == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"content": [{"type": "text", "text": "hello Ada (accept)"}]},
    }
    assert len(worker.served) == runs + 1  # the answer's run; the question's ended with its invocation


async def _official_client_answering_after(url: str, seconds: float) -> str:
    async def think_then_answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        await anyio.sleep(seconds)  # the person at the client, thinking
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with Client(url, mode="legacy", elicitation_callback=think_then_answer) as client:
        result = await client.call_tool("ask_user", {})
    content = result.content[0]
    return content.text if isinstance(content, types.TextContent) else ""


@pytest.mark.parametrize("door", DOORS)
async def test_the_official_client_answering_later_bills_the_serving_function_little(
    stack: LocalAws, door: str
) -> None:
    function, think = DOORS[door], THINK_SECONDS
    before = stack.bill.summary().get(function, {}).get("billedMs", 0)  # none before the function's first invocation
    with anyio.fail_after(think + 60):
        text = await _official_client_answering_after(f"{stack.url(door)}/mcp", think)
    billed = stack.bill.summary()[function]["billedMs"] - before
    assert text == "hello Ada (accept)"
    # The handshake, the call up to its question, the answer and the client's polls (one a second at first).
    assert billed <= 2000, f"{function} billed {billed} ms for a call answered after {think} s"
