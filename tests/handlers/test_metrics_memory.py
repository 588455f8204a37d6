"""Metrics never pile up in a long-lived process: the local sink keeps one summary per metric and dimension set,
and the streaming shape writes its EMF data points after every request."""

from __future__ import annotations

import io
import json

import httpx
import pytest

from stratus import Settings, build_app
from stratus.handlers.streaming import flushing_after_each_request
from stratus.metrics import LocalMetrics
from stratus.observability import EmfMetrics
from tests.fixtures.sample_server import server
from tests.fixtures.wire import STATELESS, stateless_meta

pytestmark = pytest.mark.anyio


def test_the_local_sink_keeps_constant_memory_however_many_latencies_it_records() -> None:
    metrics = LocalMetrics()
    for index in range(50_000):
        metrics.latency("latency", float(index % 7), method="tools/call", item="add")
    assert len(metrics.latencies) == 1
    summary = metrics.latencies[("latency", (("method", "tools/call"), ("item", "add")))]
    assert (summary.count, summary.total, summary.maximum) == (50_000, float(sum(i % 7 for i in range(50_000))), 6.0)


async def test_the_streaming_shape_writes_its_metrics_after_each_request() -> None:
    written = io.StringIO()
    metrics = EmfMetrics("Stratus", "demo", stream=written)
    app = flushing_after_each_request(build_app(server, Settings(), metrics=metrics), metrics.flush)
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": "add",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": stateless_meta()},
    }
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        for _ in range(3):
            assert (await http.post("/mcp", json=body, headers=headers)).status_code == 200
    documents = [json.loads(line) for line in written.getvalue().splitlines()]
    calls = [document for document in documents if "calls" in document]
    assert len(calls) == 3 and all(document["calls"] == 1 for document in calls)  # one flush per request
