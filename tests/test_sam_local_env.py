"""infra/local-env.json, the `--env-vars` file of `sam local invoke` / `sam local start-api`: SAM CLI applies a
variable only where the template declares it for that function (docs/deploy.md), so the file names no other; and
with its values over the template's, the handlers start with no AWS account behind them (no SSM, no DynamoDB)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from stratus.emulator.stack import read_stack
from tests.fixtures.emulated_stack import TEMPLATE
from tests.fixtures.processes import START_TIMEOUT_SECONDS, free_port
from tests.fixtures.wire import BASE_HEADERS, STATELESS, stateless_meta

ENV_VARS = Path(__file__).parent.parent / "infra" / "local-env.json"
NO_AWS = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_DEFAULT_REGION": "us-east-1"}
"""Any AWS call would go to a closed port and fail: the handlers must not make one."""


def _declared() -> dict[str, dict[str, str]]:
    """Each function's environment as the template declares it (Globals merged by the translation), by logical id."""
    return {function.logical_id: dict(function.environment) for function in read_stack(TEMPLATE).functions.values()}


def _local_environment(logical_id: str) -> dict[str, str]:
    """What the function sees under `sam local --env-vars infra/local-env.json`: the file over the template."""
    overrides = json.loads(ENV_VARS.read_text(encoding="utf-8"))
    return {**_declared()[logical_id], **overrides[logical_id]}


def test_the_file_names_only_variables_the_template_declares_for_each_function() -> None:
    declared = _declared()
    overrides = json.loads(ENV_VARS.read_text(encoding="utf-8"))
    assert set(overrides) == {"BufferedFunction", "StreamingFunction"}
    for logical_id, variables in overrides.items():
        assert set(variables) <= set(declared[logical_id]), (logical_id, set(variables) - set(declared[logical_id]))
        assert all(isinstance(value, str) for value in variables.values())
        assert not any(value.startswith(("ssm:", "secretsmanager:")) for value in variables.values())


def test_the_buffered_handler_starts_with_it_and_answers_tools_list() -> None:
    probe = (
        "import json, sys\n"
        "from stratus.handlers.buffered import handler\n"
        "from stratus.handlers.snapstart import priming_event\n"
        "class Context:\n"
        "    aws_request_id = 'sam-local'\n"
        "    def get_remaining_time_in_millis(self):\n"
        "        return 30000\n"
        "answer = handler(priming_event('/mcp'), Context())\n"
        "tools = [tool['name'] for tool in json.loads(answer['body'])['result']['tools']]\n"
        "print(json.dumps([answer['statusCode'], tools, 'boto3' in sys.modules]))\n"
    )
    environment = {"PATH": os.environ.get("PATH", ""), **NO_AWS, **_local_environment("BufferedFunction")}
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=environment, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout.splitlines()[-1]) == [200, ["add", "forecast", "divide"], False]


@pytest.mark.uvicorn
def test_the_streaming_entry_starts_with_it_and_passes_the_readiness_check() -> None:
    port = free_port()
    environment = {
        "PATH": os.environ.get("PATH", ""),
        **NO_AWS,
        **_local_environment("StreamingFunction"),
        "AWS_LWA_PORT": str(port),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "stratus.handlers.streaming"],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=2) as http:
            ready = _wait_ready(http, process)
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": stateless_meta()}}
            headers = {**BASE_HEADERS, "mcp-protocol-version": STATELESS, "mcp-method": "tools/list"}
            listed = http.post("/mcp", json=body, headers=headers)
        assert ready == 200
        assert [tool["name"] for tool in listed.json()["result"]["tools"]] == ["add", "forecast", "divide"]
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


def _wait_ready(http: httpx.Client, process: subprocess.Popen[bytes]) -> int:
    """The adapter's readiness check (`AWS_LWA_READINESS_CHECK_PATH=/health/live`), polled until it answers."""
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the streaming entry exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            return http.get("/health/live").status_code
        except httpx.TransportError:
            time.sleep(0.05)  # polling a process start-up, bounded by the deadline
    pytest.fail(f"the streaming entry did not listen within {START_TIMEOUT_SECONDS} s")
