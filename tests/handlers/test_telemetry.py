"""Telemetry on Lambda: EMF metrics flushed per invocation, JSON logs with correlation ids and no secrets."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stratus import Context, McpServer, Settings
from stratus.handlers.adapter import make_handler
from tests.fixtures.fresh_interpreter import run_fresh
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request

SECRET = "eyJ.SECRET-TOKEN.sig"


def make_server() -> McpServer:
    server = McpServer("telemetry")
    log = logging.getLogger("stratus.tool.demo")

    @server.tool()
    def work(fail: bool = False) -> str:
        log.info("working", extra={"step": "one"})
        if fail:
            raise RuntimeError("database down")
        return "done"

    return server


@pytest.fixture
def isolated_logging() -> Iterator[io.StringIO]:
    """Route the root logger to a buffer for the test, restoring handlers, formatters and levels afterwards."""
    root = logging.getLogger()
    saved = [(handler, handler.formatter, list(handler.filters)) for handler in root.handlers]
    saved_level, stratus_level = root.level, logging.getLogger("stratus").level
    calls_level = logging.getLogger("stratus.calls").level
    buffer = io.StringIO()
    capture = logging.StreamHandler(buffer)
    root.handlers = [capture]
    root.setLevel(logging.DEBUG)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield buffer
    finally:
        root.handlers = [handler for handler, _, _ in saved]
        for handler, formatter, filters in saved:
            handler.setFormatter(formatter)
            handler.filters = filters
        root.setLevel(saved_level)
        logging.getLogger("stratus").setLevel(stratus_level)
        logging.getLogger("stratus.calls").setLevel(calls_level)
        asyncio.set_event_loop(None)
        loop.close()


def invoke(handler: Any, arguments: dict[str, Any], request_id: str) -> dict[str, Any]:
    body, headers = stateless_request("tools/call", {"name": "work", "arguments": arguments})
    headers["authorization"] = f"Bearer {SECRET}"
    context = LambdaContext(aws_request_id=request_id)
    response: dict[str, Any] = handler(event("http_api_v2", body, headers), context)
    return response


def emf_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"')]


def test_emf_metrics_are_flushed_each_invocation_with_cold_start_once(
    isolated_logging: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    handler = make_handler(
        make_server(), Settings(telemetry="emf", metrics_namespace="StratusTest", metrics_tools=("work",))
    )
    invoke(handler, {}, "req-1")
    first = emf_lines(capsys.readouterr().out)
    invoke(handler, {"fail": True}, "req-2")
    second = emf_lines(capsys.readouterr().out)
    assert any(line.get("cold_start") == 1 for line in first)
    assert not any("cold_start" in line for line in second)
    assert len(first) == len(second) == 1  # one document per invocation: every data point's directive in it
    calls = first[0]
    directive = next(
        d for d in calls["_aws"]["CloudWatchMetrics"] if {"Name": "calls", "Unit": "Count"} in d["Metrics"]
    )
    assert directive["Namespace"] == "StratusTest"
    assert directive["Dimensions"] == [["service", "item", "method", "outcome"]]
    assert (calls["item"], calls["outcome"], calls["calls"]) == ("work", "success", 1)
    latency = next(d for d in calls["_aws"]["CloudWatchMetrics"] if d["Metrics"][0]["Name"] == "latency")
    assert latency["Dimensions"] == [["service", "item", "method"]] and calls["latency"] >= 0
    failed = next(line for line in second if "errors" in line)
    assert (failed["outcome"], failed["errors"]) == ("tool_error", 1)


@pytest.mark.parametrize(("level", "lines"), [("INFO", 0), ("DEBUG", 1)])
def test_on_lambda_a_call_writes_no_console_line_of_its_own_but_at_debug(
    isolated_logging: io.StringIO, capsys: pytest.CaptureFixture[str], level: str, lines: int
) -> None:
    """`stratus serve`'s one line per call would be one more billed log line per invocation on Lambda, where the EMF
    document already counts the call."""
    handler = make_handler(make_server(), Settings(telemetry="emf", log_level=level))
    invoke(handler, {}, "req-7")
    records = [json.loads(line) for line in isolated_logging.getvalue().splitlines() if line.startswith("{")]
    assert len([record for record in records if record.get("logger") == "stratus.calls"]) == lines, records


def test_by_default_a_calls_metrics_carry_no_tool_name_so_a_server_has_a_few_metrics_whatever_its_tools(
    isolated_logging: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each combination of dimension values is a custom metric billed every month (about $0.30): per tool, a
    10-tool server had 40-60. Only the tools STRATUS_METRICS_TOOLS names keep the `item` dimension."""
    from stratus.observability import EmfMetrics

    stream = io.StringIO()
    metrics = EmfMetrics("Ns", "svc", stream=stream, clock=lambda: 1.5, tools=("checkout",))
    for tool in ("a", "b", "checkout"):
        metrics.count("calls", method="tools/call", item=tool, outcome="success")
        metrics.latency("latency", 1.0, method="tools/call", item=tool)
    metrics.flush()
    documents = emf_lines(stream.getvalue())
    dimension_sets = {
        (tuple(directive["Dimensions"][0]), metric["Name"], document.get("item"))
        for document in documents
        for directive in document["_aws"]["CloudWatchMetrics"]
        for metric in directive["Metrics"]
    }
    assert dimension_sets == {
        (("service", "method", "outcome"), "calls", None),
        (("service", "method"), "latency", None),
        (("service", "item", "method", "outcome"), "calls", "checkout"),
        (("service", "item", "method"), "latency", "checkout"),
    }
    merged = next(d for d in documents if "item" not in d and "calls" in d)
    assert merged["calls"] == [1, 1]  # a and b: two data points of one metric
    handler = make_handler(make_server(), Settings(telemetry="emf"))
    invoke(handler, {}, "req-3")
    assert all("item" not in line for line in emf_lines(capsys.readouterr().out))


def test_json_logs_carry_correlation_ids_and_never_the_token_or_event(
    isolated_logging: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    handler = make_handler(make_server(), Settings(telemetry="emf"))
    invoke(handler, {"fail": True}, "req-42")
    records = [json.loads(line) for line in isolated_logging.getvalue().splitlines() if line.startswith("{")]
    working = next(record for record in records if record["message"] == "working")
    assert working["lambda_request_id"] == "req-42"
    assert working["item"] == "work" and working["mcp_method"] == "tools/call" and working["step"] == "one"
    failure = next(record for record in records if record["message"] == "tool raised")
    assert failure["exception_type"] == "RuntimeError" and failure["error_ref"]
    everything = isolated_logging.getvalue() + capsys.readouterr().out
    assert SECRET not in everything
    assert "authorization" not in everything.lower() and "requestContext" not in everything


def test_powertools_telemetry_emits_emf_through_powertools(
    isolated_logging: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    handler = make_handler(
        make_server(), Settings(telemetry="powertools", metrics_namespace="StratusPT", metrics_tools=("*",))
    )
    invoke(handler, {}, "req-7")
    lines = emf_lines(capsys.readouterr().out)
    calls = next(line for line in lines if "calls" in line)
    assert calls["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "StratusPT"
    assert (calls["item"], calls["outcome"]) == ("work", "success")
    working = next(json.loads(line) for line in isolated_logging.getvalue().splitlines() if "working" in line)
    assert working["lambda_request_id"] == "req-7" and working["item"] == "work"


def named_request(method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
    body, headers = stateless_request(method, params)
    headers["mcp-name"] = name
    return event("http_api_v2", body, headers)


def test_metric_dimensions_name_catalog_entries_never_what_the_client_chose(
    isolated_logging: io.StringIO, capsys: pytest.CaptureFixture[str]
) -> None:
    server = make_server()

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        return f"note {name}"

    @server.resource("config://app")
    def config() -> str:
        return "{}"

    @server.prompt()
    def greet() -> str:
        return "hello"

    handler = make_handler(server, Settings(telemetry="emf", metrics_tools=("*",)))
    chosen = [f"client-chosen-{secrets.token_hex(4)}" for _ in range(6)]
    requests = [
        *(("resources/read", {"uri": f"notes://{value}"}, f"notes://{value}") for value in chosen[:3]),
        ("resources/read", {"uri": "config://app"}, "config://app"),
        ("resources/read", {"uri": f"unknown://{chosen[3]}"}, f"unknown://{chosen[3]}"),
        ("tools/call", {"name": chosen[4]}, chosen[4]),
        ("prompts/get", {"name": chosen[5]}, chosen[5]),
        ("prompts/get", {"name": "greet"}, "greet"),
    ]
    for number, (method, params, name) in enumerate(requests):
        handler(named_request(method, params, name), LambdaContext(aws_request_id=f"req-{number}"))
    lines = emf_lines(capsys.readouterr().out)
    reads = sorted(line["item"] for line in lines if line.get("method") == "resources/read" and "calls" in line)
    assert reads == ["config://app", "notes://{name}", "notes://{name}", "notes://{name}"]
    assert {line["item"] for line in lines if "item" in line} == {"config://app", "notes://{name}", "greet"}
    emitted = json.dumps(lines)
    assert not [value for value in chosen if value in emitted]  # neither expanded URIs nor unknown names


def test_a_tools_own_powertools_logger_and_metrics_share_the_calls_correlation_and_namespace(
    isolated_logging: io.StringIO, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.metrics import MetricUnit

    service = f"orders-{secrets.token_hex(4)}"  # Powertools keeps one configured logger per service name
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", service)
    monkeypatch.delenv("POWERTOOLS_METRICS_NAMESPACE", raising=False)
    server = McpServer("telemetry")
    logger, metrics = Logger(), Metrics()  # the ordinary way: module level, no arguments

    @server.tool()
    def work(ctx: Context) -> str:
        logger.info("placing order", order="o-1")
        metrics.add_metric(name="OrdersPlaced", unit=MetricUnit.Count, value=1)
        return "done"

    settings = Settings(telemetry="powertools", metrics_namespace="Shop", auth_mode="gateway")
    handler = make_handler(server, settings)
    body, headers = stateless_request("tools/call", {"name": "work", "arguments": {}})
    headers["authorization"] = f"Bearer {SECRET}"
    recorded = event("http_api_v2", body, headers)
    recorded["requestContext"]["authorizer"] = {"jwt": {"claims": {"sub": "ana"}}}
    response = handler(recorded, LambdaContext(aws_request_id="req-9"))
    assert response["statusCode"] == 200
    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    placing = next(line for line in lines if line.get("message") == "placing order")
    assert placing["service"] == service and placing["order"] == "o-1"
    assert placing["lambda_request_id"] == "req-9" and placing["mcp_request_id"] == 1
    assert (placing["mcp_method"], placing["item"], placing["principal"]) == ("tools/call", "work", "ana")
    placed = next(line for line in lines if "OrdersPlaced" in line)
    ours = next(line for line in lines if "calls" in line)
    for emitted in (placed, ours):
        assert emitted["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Shop"
        assert emitted["service"] == service
    assert SECRET not in out and SECRET not in isolated_logging.getvalue()


def test_a_tools_powertools_logger_line_is_written_once_when_the_root_had_no_handler_before(
    isolated_logging: io.StringIO, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the Web Adapter the function is a plain Python process: the root logger has no handler while the
    tool's module makes its `Logger()`, and gets one (stderr) when Stratus configures logging afterwards."""
    from aws_lambda_powertools import Logger

    logging.getLogger().handlers = []  # the fixture puts its own back afterwards
    service = f"orders-{secrets.token_hex(4)}"
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", service)
    server = McpServer("telemetry")
    logger = Logger()

    @server.tool()
    def work() -> str:
        logger.info("placing order")
        logging.getLogger("stratus.tool.orders").info("stratus's own line")
        return "done"

    handler = make_handler(server, Settings(telemetry="powertools"))
    assert invoke(handler, {}, "req-11")["statusCode"] == 200
    written = capsys.readouterr()
    assert (written.out + written.err).count("placing order") == 1
    placing = next(json.loads(line) for line in written.out.splitlines() if "placing order" in line)
    assert placing["lambda_request_id"] == "req-11" and placing["item"] == "work"
    assert (written.out + written.err).count("stratus's own line") == 1


TRACED_TOOL = """
import json, os, socket, sys
daemon = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
daemon.bind(("127.0.0.1", 0))
daemon.settimeout(10)
os.environ["AWS_XRAY_DAEMON_ADDRESS"] = "127.0.0.1:%d" % daemon.getsockname()[1]
from aws_lambda_powertools import Tracer
from stratus import McpServer, Settings
from stratus.handlers.adapter import make_handler
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
server = McpServer("orders")
tracer = Tracer()

@server.tool()
@tracer.capture_method
def place_order() -> str:
    return "placed"

handler = make_handler(server, Settings(telemetry="powertools", auth_mode="gateway"))
body, headers = stateless_request("tools/call", {"name": "place_order", "arguments": {}})
recorded = event("http_api_v2", body, headers)
recorded["requestContext"]["authorizer"] = {"jwt": {"claims": {"sub": "ana"}}}
assert handler(recorded, LambdaContext(aws_request_id="req-12"))["statusCode"] == 200
for _ in range(10):  # each datagram: a header line, then one subsegment
    document = json.loads(daemon.recv(65536).decode().split("\\n", 1)[1])
    if document.get("name") == "## __main__.place_order":
        print(json.dumps(document.get("annotations")))
        break
"""


def test_a_tools_powertools_tracer_subsegment_carries_the_calls_correlation_as_annotations() -> None:
    """In a bare Python set up as Lambda sets up a traced function: what the X-Ray SDK sends its daemon (UDP, here
    on 127.0.0.1) for the subsegment of a tool traced the ordinary way (`@tracer.capture_method`)."""
    lambda_environment = {
        "LAMBDA_TASK_ROOT": "/var/task",
        "AWS_LAMBDA_FUNCTION_NAME": "orders",
        "POWERTOOLS_SERVICE_NAME": "orders",
        "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
    }
    printed = run_fresh(TRACED_TOOL, lambda_environment, cwd=Path(__file__).parents[2])
    annotations = json.loads(printed.splitlines()[-1])
    assert annotations == {
        "lambda_request_id": "req-12",
        "mcp_request_id": 1,
        "mcp_method": "tools/call",
        "item": "place_order",
        "principal": "ana",
    }


def test_emf_data_points_that_disagree_on_a_dimension_or_share_a_metric_go_in_documents_of_their_own() -> None:
    """Two calls of different tools in one invocation (a batch): each `calls` point keeps its own `item`."""
    from stratus.observability import EmfMetrics

    stream = io.StringIO()
    metrics = EmfMetrics("Ns", "svc", stream=stream, clock=lambda: 1.5, tools=("a", "b"))
    metrics.count("calls", method="tools/call", item="a", outcome="success")
    metrics.count("calls", method="tools/call", item="b", outcome="success")
    metrics.count("cold_start")
    metrics.flush()
    documents = emf_lines(stream.getvalue())
    assert [(d.get("item"), d["calls"], d.get("cold_start")) for d in documents] == [("a", 1, 1), ("b", 1, None)]
    assert all(d["_aws"]["Timestamp"] == 1500 and d["service"] == "svc" for d in documents)
    metrics.flush()
    assert emf_lines(stream.getvalue()) == documents  # nothing recorded since: nothing written


def test_emf_text_of_a_shape_seen_before_is_its_documents_rendered_with_the_new_values() -> None:
    """Each flush fills in the text its shape's first flush cut at the values: the same bytes as its documents
    rendered whole, for one value, several, whole numbers, non-finite ones and documents of their own."""
    from stratus.observability import EmfMetrics, _Document

    metrics = EmfMetrics("Ns", "svc", stream=io.StringIO(), clock=lambda: 1.5)
    for latency, extra in ((1.0, [1, 2.0]), (0.1234, [3.0, 4.5]), (float("nan"), [7.0, float("inf")]), (2.5, [-1e300])):
        written = io.StringIO()
        metrics._stream = written
        metrics.count("calls", method="tools/call", item="a", outcome="success")
        metrics.latency("latency", latency, method="tools/call", item="a")
        metrics.count("calls", method="tools/call", item="b\u00e9\x00", outcome="error")
        for value in extra:
            metrics.count("retries", value, item="a")
        documents: list[_Document] = []
        for dimensions, points in metrics._points.items():
            if not any(document.takes(dimensions, points) for document in documents):
                documents.append(_Document(dimensions, points))
        whole = "".join(metrics._render(document, 1500) for document in documents)
        metrics.flush()
        assert written.getvalue() == whole
        assert len(emf_lines(whole)) == 2
