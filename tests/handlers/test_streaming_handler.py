"""The streaming Lambda shape: `run.sh` starts uvicorn for the Lambda Web Adapter, which forwards invocations
as HTTP with the request context in a header."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from stratus import Settings
from stratus.handlers.streaming import adapter_app
from tests.fixtures.apps import shared
from tests.fixtures.processes import free_port
from tests.fixtures.wire import BASE_HEADERS, STATELESS, McpHttp, sse_fields, stateless_meta

ROOT = Path(__file__).parent.parent.parent
DOMAIN = "q3lyomzk6ykzmvjt6vstosmttu0chtrr.lambda-url.us-east-1.on.aws"
pytestmark = pytest.mark.uvicorn


@pytest.fixture(scope="module")
def adapter_target() -> Iterator[str]:
    """`run.sh` as the adapter starts it: its port from AWS_LWA_PORT, the app from STRATUS_APP."""
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STRATUS_")}, "AWS_LWA_PORT": str(port)}
    env["STRATUS_TRUST_REQUEST_CONTEXT_HEADER"] = "true"  # as template.yaml sets it on the streaming function
    env["STRATUS_APP"] = "tests.fixtures.sample_server:server"
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    process = subprocess.Popen(["sh", str(ROOT / "run.sh")], cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert process.poll() is None, "run.sh exited"
                assert time.monotonic() < deadline, "run.sh did not listen within 20 s"
                time.sleep(0.05)  # polling a process start-up, bounded by the deadline
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_readiness_path_answers(adapter_target: str) -> None:
    response = httpx.get(f"{adapter_target}/health/live", timeout=5)
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def forwarded(host: str) -> dict[str, str]:
    """Headers as the adapter forwards a Function URL request: the Host and the request context."""
    context = {"domainName": DOMAIN, "http": {"method": "POST", "path": "/mcp"}, "requestId": "r-1"}
    return {**BASE_HEADERS, "host": host, "x-amzn-request-context": json.dumps(context)}


def test_the_function_url_domain_from_the_request_context_is_served(adapter_target: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": stateless_meta()}}
    headers = {**forwarded(DOMAIN), "mcp-protocol-version": STATELESS, "mcp-method": "tools/list"}
    response = httpx.post(f"{adapter_target}/mcp", json=body, headers=headers, timeout=5)
    assert response.status_code == 200
    assert [tool["name"] for tool in response.json()["result"]["tools"]] == ["add", "forecast", "divide"]
    refused = httpx.post(
        f"{adapter_target}/mcp", json=body, headers={**headers, **forwarded("evil.example.com")}, timeout=5
    )
    assert refused.status_code == 421


def test_run_sh_imports_what_the_runtime_and_layers_ship(tmp_path: Path) -> None:
    """The managed runtime keeps boto3 in $LAMBDA_RUNTIME_DIR and layers sit in /opt/python: run.sh puts both on the
    path, after the package, as the Web Adapter's examples do. Here the served app itself lives only there."""
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "runtime_probe.py").write_text(
        "from stratus import McpServer\nserver = McpServer('probe')\n\n@server.tool()\ndef ping() -> str:\n"
        "    '''Ping.'''\n    return 'pong'\n",
        encoding="utf-8",
    )
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("STRATUS_") and k != "PYTHONPATH"},
        "AWS_LWA_PORT": str(port),
        "LAMBDA_TASK_ROOT": str(ROOT),
        "LAMBDA_RUNTIME_DIR": str(runtime),
        "STRATUS_APP": "runtime_probe:server",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    }
    process = subprocess.Popen(["sh", str(ROOT / "run.sh")], cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/health/live", timeout=0.5)
                break
            except httpx.TransportError:
                assert process.poll() is None, "run.sh exited: the app in $LAMBDA_RUNTIME_DIR was not importable"
                assert time.monotonic() < deadline, "run.sh did not listen within 20 s"
                time.sleep(0.05)  # polling a process start-up, bounded by the deadline
        assert response.status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.anyio
async def test_the_streaming_entry_point_answers_every_get_stream_as_a_poll_whatever_the_version() -> None:
    """Behind the Web Adapter a stream runs, billed, until it ends, even after its client left: the entry point
    builds the app for Lambda, so a 2025-06-18 client's GET stream ends at once too, with where to come back."""
    app = adapter_app(shared, Settings(), Settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        for version in ("2025-06-18", "2025-11-25"):
            session = await McpHttp(http).initialize(version)
            with anyio.fail_after(10):
                polled = await http.get("/mcp", headers={**BASE_HEADERS, **session.headers})
            place = sse_fields(polled.text)[-1]
            assert place["id"].startswith("g-") and place["retry"] == "5000", version
