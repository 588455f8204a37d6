"""One trace across functions through `stratus local --traces`: each container sends its spans (OTLP/HTTP, the
OpenTelemetry SDK's own exporter) to the emulator's receiver, which decodes them with OpenTelemetry's message types.
A task's request to the buffered function and its run in the task worker, its steps included, are one trace, the
client's."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from stratus import Settings, build_app
from stratus.emulator.local_aws import LocalAws
from stratus.emulator.trace_receiver import ReceivedSpan
from stratus.otel_tracing import OtelTracing
from tests.fixtures.emulated_stack import TEMPLATE, serving
from tests.fixtures.sample_server import server as sample_server
from tests.fixtures.servers import uvicorn_serving
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
    await _until(lambda: len([span for span in _spans(stack) if span.name == "call run"]) == 2)

    spans = _spans(stack)
    (called,) = [span for span in spans if span.name == "tools/call approve"]
    runs = [span for span in spans if span.name == "call run"]  # up to the question, then after the answer
    assert (called.service, called.parent_span_id) == (BUFFERED, CLIENT_SPAN)
    # The run after the answer, which the answer's POST launched (no request span of its own), continues the call's
    # trace from its record.
    assert [(run.service, run.kind, run.parent_span_id) for run in runs] == [(WORKER, "CONSUMER", called.span_id)] * 2


async def test_the_streaming_function_s_spans_are_sent_before_its_response_ends(stack: LocalAws) -> None:
    """Behind the Web Adapter, the invocation is over once the response's last bytes are passed on, and the emulator
    freezes the container as Lambda does: spans flushed after them would wait for the next thaw. They are already at
    the receiver when the client has the whole response, with no other request made."""
    url = f"{stack.url('StreamingFunctionUrl')}/mcp"
    traceparent = "00-5b8efff798038103d269b633813fc60c-eee19b7ec3c1b174-01"
    meta = stateless_meta(traceparent=traceparent)
    headers = {**BASE_HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "export"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "export", "arguments": {"name": "q"}}}
    body["params"]["_meta"] = meta  # type: ignore[index]
    async with httpx.AsyncClient(timeout=BOUND) as http:
        answered = await http.post(url, json=body, headers=headers)
    assert answered.status_code == 200, answered.text
    assert stack.traces is not None
    served = [span for span in stack.traces.spans() if span.trace_id == "5b8efff798038103d269b633813fc60c"]
    assert [(span.name, span.service) for span in served if span.kind == "SERVER"] == [
        ("tools/call export", "stratus-local-StreamingFunction")
    ]


@pytest.fixture(scope="module")
def xray_stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE, parameters={"Traces": "xray"}, app="tests.fixtures.durable_apps:server") as aws:
        yield aws


async def test_with_traces_xray_each_function_signs_its_spans_to_x_ray_under_its_role(xray_stack: LocalAws) -> None:
    """`Traces=xray`: no `--traces`, the template alone; the emulator answers as X-Ray's OTLP endpoint and checks each
    export's SigV4 key against its function's role (`xray:PutTraceSegments`)."""
    url = f"{xray_stack.url('ServerlessHttpApi')}/mcp"
    async with httpx.AsyncClient(timeout=BOUND) as http:
        await _call(http, url, "tools/call", {"name": "two_steps", "arguments": {}})
    await _until(lambda: any(span.name == "tools/call two_steps" for span in _spans(xray_stack)))

    (created,) = [span for span in _spans(xray_stack) if span.name == "tools/call two_steps"]
    assert (created.service, created.parent_span_id) == (BUFFERED, CLIENT_SPAN)
    exports = [call for call in xray_stack.calls.calls if call.action == "xray:PutTraceSegments"]
    assert exports and all(call.allowed for call in exports)
    assert BUFFERED in {call.function for call in exports}


async def test_a_gateway_call_through_stratus_local_and_its_upstream_stratus_are_one_trace(tmp_path: Path) -> None:
    """The buffered function serves a gateway (`STRATUS_GATEWAY_CONFIG`) to an upstream Stratus on 127.0.0.1, which
    sends its spans with OpenTelemetry's own OTLP exporter to the same receiver: the upstream's server span is the
    child of the gateway's run of the proxied tool, in the client's trace."""
    provider = TracerProvider(resource=Resource.create({"service.name": "upstream"}))
    upstream = build_app(sample_server, Settings(), tracing=OtelTracing(provider))
    with uvicorn_serving(upstream, lifespan="on") as upstream_url:
        config = tmp_path / "gateway.json"
        config.write_text(json.dumps({"mcpServers": {"sample": {"url": f"{upstream_url}/mcp", "namespaced": False}}}))
        environment = {"STRATUS_GATEWAY_CONFIG": str(config), "STRATUS_GATEWAY_ALLOWED_NETWORKS": "127.0.0.0/8"}
        with serving(TEMPLATE, environment=environment, traces=True) as stack:
            exported = OTLPSpanExporter(endpoint=f"{stack.aws_endpoint}/v1/traces")
            provider.add_span_processor(SimpleSpanProcessor(exported))
            url = f"{stack.url('ServerlessHttpApi')}/mcp"
            async with httpx.AsyncClient(timeout=BOUND) as http:
                result = await _call(http, url, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
            assert result["structuredContent"] == {"result": 3}
            await _until(lambda: any(span.service == "upstream" for span in _spans(stack)))
            spans = _spans(stack)
        provider.shutdown()

    gateway = [span for span in spans if span.service == BUFFERED]
    (called,) = [span for span in gateway if span.name == "tools/call add" and span.kind == "SERVER"]
    (proxied,) = [span for span in gateway if span.name == "execute_tool add"]
    (sent,) = [span for span in gateway if span.name == "tools/call add" and span.kind == "CLIENT"]
    (upstream_call,) = [span for span in spans if span.name == "tools/call add" and span.service == "upstream"]
    assert called.parent_span_id == CLIENT_SPAN
    assert proxied.parent_span_id == called.span_id
    assert sent.parent_span_id == proxied.span_id
    assert (upstream_call.kind, upstream_call.parent_span_id) == ("SERVER", sent.span_id)
