"""One trace across functions through `stratus local --traces`: each container sends its spans (OTLP/HTTP, the
OpenTelemetry SDK's own exporter) to the emulator's receiver, which decodes them with OpenTelemetry's message types.
A task's request to the buffered function and its run in the task worker, its steps included, are one trace, the
client's."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from stratus.emulator.trace_receiver import ReceivedSpan
from tests.fixtures.emulated_stack import TEMPLATE, serving
from tests.fixtures.streams import poll_for_response
from tests.fixtures.wire import BASE_HEADERS, sse_fields, stateless_meta

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
BUFFERED, WORKER = "stratus-local-BufferedFunction", "stratus-local-TaskWorkerFunction"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
EXTENSION = "io.modelcontextprotocol/tasks"
BOUND = 30.0


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE, app="tests.fixtures.durable_apps:server", traces=True) as aws:
        yield aws


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(BOUND):
        while not condition():  # noqa: ASYNC110 - the emulator's state, moved by the containers' exports: bounded
            await anyio.sleep(0.05)


async def _call(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    meta = stateless_meta(
        traceparent=f"00-{TRACE_ID}-{CLIENT_SPAN}-01",
        **{"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}}},
    )
    named = params.get("name") or params.get("taskId")
    headers = {**BASE_HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": method, "mcp-name": str(named)}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    answered = await http.post(url, json=body, headers=headers)
    assert answered.status_code == 200, answered.text
    result: dict[str, Any] = answered.json()["result"]
    return result


def _spans(stack: LocalAws) -> list[ReceivedSpan]:
    assert stack.traces is not None
    return [span for span in stack.traces.spans() if span.trace_id == TRACE_ID]


async def test_a_task_s_request_and_its_run_in_the_task_worker_are_one_trace_the_client_s(stack: LocalAws) -> None:
    url = f"{stack.url('ServerlessHttpApi')}/mcp"
    async with httpx.AsyncClient(timeout=BOUND) as http:
        task_id = (await _call(http, url, "tools/call", {"name": "two_steps", "arguments": {}}))["taskId"]
        with anyio.fail_after(BOUND):
            while (await _call(http, url, "tasks/get", {"taskId": task_id}))["status"] == "working":  # noqa: ASYNC110
                await anyio.sleep(0.1)  # a client polling tasks/get
    await _until(lambda: any(span.service == WORKER for span in _spans(stack)))

    spans = _spans(stack)
    (created,) = [span for span in spans if span.name == "tools/call two_steps"]
    (run,) = [span for span in spans if span.name == "task run"]
    (tool,) = [span for span in spans if span.name == "execute_tool two_steps"]
    steps = [span for span in spans if span.name.startswith("step ")]
    assert (created.service, created.kind, created.parent_span_id) == (BUFFERED, "SERVER", CLIENT_SPAN)
    assert created.attributes["gen_ai.tool.name"] == "two_steps"
    assert (run.service, run.kind, run.parent_span_id) == (WORKER, "CONSUMER", created.span_id)
    assert (tool.service, tool.parent_span_id) == (WORKER, run.span_id)
    # Each step of the tool's run, in order, under it.
    assert [(step.name, step.parent_span_id) for step in steps] == [
        ("step first", tool.span_id),
        ("step second", tool.span_id),
    ]
    # The client's polls are spans of its trace too, each a tasks/get.
    assert {span.name for span in spans if span.service == BUFFERED} >= {"tools/call two_steps", "tasks/get"}


async def test_a_handshake_call_relayed_to_the_task_worker_is_one_trace_with_its_request(stack: LocalAws) -> None:
    """Through the HTTP API a call whose tool may ask its client runs in the task worker (a relayed call): its run
    there is the child of the request's span, whose parent is the client's `traceparent` header."""
    url = f"{stack.url('ServerlessHttpApi')}/mcp"
    traceparent = {"traceparent": f"00-{TRACE_ID}-{CLIENT_SPAN}-01"}
    async with httpx.AsyncClient(timeout=BOUND) as http:
        params = {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t"}}
        opened = await http.post(
            url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=BASE_HEADERS
        )
        headers = {
            **BASE_HEADERS,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        asked = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "approve", "arguments": {}}},
            headers={**headers, **traceparent},
        )
        question = next(event for event in sse_fields(asked.text) if event.get("data"))
        request = json.loads(question["data"])
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"ok": True}}}
        assert (await http.post(url, json=answer, headers=headers)).status_code == 202
        place = [event["id"] for event in sse_fields(asked.text) if event.get("id")][-1]
        result = await poll_for_response(http, url, headers, place, 7)
    assert result is not None and result["result"]["content"][0]["text"] == "done"
    await _until(lambda: any(span.name == "call run" for span in _spans(stack)))

    spans = _spans(stack)
    (called,) = [span for span in spans if span.name == "tools/call approve"]
    (run,) = [span for span in spans if span.name == "call run"]  # up to the question; the answer's starts its own
    assert (called.service, called.parent_span_id) == (BUFFERED, CLIENT_SPAN)
    assert (run.service, run.kind, run.parent_span_id) == (WORKER, "CONSUMER", called.span_id)
