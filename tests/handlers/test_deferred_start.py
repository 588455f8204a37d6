"""Both functions start even when SSM is out of reach (a VPC without an endpoint for it): the buffered one's
SnapStart snapshot is taken, the streaming one's process answers the Web Adapter's readiness check. The secret is
read on a later request, and until then every call is the same 503 naming the setting. Reads go through real
botocore to 127.0.0.1: a closed port, a listener that never answers, moto's server."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import os
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import snapshot_restore_py

from stratus.handlers.adapter import make_handler
from stratus.handlers.deferred import DeferredStart, ResolvedSettings
from stratus.handlers.secrets import SecretUnavailableError, settings_from_env, settings_without_secrets
from stratus.handlers.streaming import adapter_app
from stratus.settings import SettingsError
from tests.fixtures.clocks import FakeClock
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
from tests.fixtures.moto_server import AWS, SerialMotoServer
from tests.fixtures.processes import START_TIMEOUT_SECONDS, free_port
from tests.fixtures.sample_server import server
from tests.fixtures.snapstart_runtime import snapstart_registries
from tests.fixtures.wire import BASE_HEADERS

PARAMETER = "/stratus/secret-key"
ROOT = Path(__file__).parents[2]


@pytest.fixture
def unreachable_ssm(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """SSM at a 127.0.0.1 port nothing listens on, and the secret key named by reference, as template.yaml does."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("STRATUS_SECRET_KEY", f"ssm:{PARAMETER}")
    monkeypatch.setenv("STRATUS_APP", "tests.fixtures.sample_server:server")


@pytest.fixture
def snapstart_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Lambda initialising for a snapshot, with snapshot_restore_py's hook registries as its runtime runs them."""
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "snap-start")
    with snapstart_registries():
        yield


@pytest.fixture
def moto_ssm(aws_credentials: None) -> Iterator[str]:
    moto = SerialMotoServer()
    url = moto.start()
    try:
        yield url
    finally:
        moto.stop()


def _tools_list(handler: Any) -> dict[str, Any]:
    body, headers = stateless_request("tools/list", {})
    answer: dict[str, Any] = handler(event("http_api_v2", body, headers), LambdaContext())
    return answer


def test_a_snapshot_init_without_a_route_to_ssm_publishes_and_answers_503_naming_the_setting(
    unreachable_ssm: None, snapstart_runtime: None
) -> None:
    module = importlib.reload(importlib.import_module("stratus.handlers.buffered"))  # the init: must not raise
    for hook, args, kwargs in [*snapshot_restore_py.get_before_snapshot(), *snapshot_restore_py.get_after_restore()]:
        hook(*args, **kwargs)  # priming and restoring must not raise either: either would fail the publication

    answer = _tools_list(module.handler)
    assert answer["statusCode"] == 503
    assert answer["headers"]["retry-after"] == "5"
    error = json.loads(answer["body"])["error"]
    assert error["code"] == -31503
    assert "STRATUS_SECRET_KEY" in error["message"] and PARAMETER not in error["message"]
    assert "in a VPC, give the function a route to SSM" in error["message"]


def test_run_locally_the_503_names_the_local_fix_not_a_vpcs(
    unreachable_ssm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SAM_LOCAL", "true")  # as stratus local (and sam local) set it
    module = importlib.reload(importlib.import_module("stratus.handlers.buffered"))

    error = json.loads(_tools_list(module.handler)["body"])["error"]

    assert error["message"] == (
        "Service Unavailable: this function cannot read STRATUS_SECRET_KEY (its secret's service did not answer): "
        "locally, set STRATUS_SECRET_KEY to the value itself in the shell that runs stratus local, which passes it "
        'to every function over the template\'s reference (docs/deploy.md, "Sign-in locally")'
    )


def test_once_ssm_answers_the_next_try_after_the_interval_serves(
    unreachable_ssm: None, moto_ssm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.set_event_loop(asyncio.new_event_loop())
    clock = FakeClock()
    settings = ResolvedSettings()
    handler = DeferredStart(lambda: make_handler(server, settings()), monotonic=clock)
    try:
        assert _tools_list(handler)["statusCode"] == 503  # the first invocation tries, and SSM does not answer

        monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", moto_ssm)
        boto3.client("ssm").put_parameter(Name=PARAMETER, Value=SECRET_KEY, Type="SecureString", Overwrite=True)
        assert _tools_list(handler)["statusCode"] == 503  # within the interval: answered at once, no read

        clock.advance(5.0)
        answer = _tools_list(handler)
        assert answer["statusCode"] == 200
        assert [tool["name"] for tool in json.loads(answer["body"])["result"]["tools"]] == ["add", "forecast", "divide"]
        assert settings.settings is not None and settings.settings.secret_key == SECRET_KEY
    finally:
        asyncio.get_event_loop().close()
        asyncio.set_event_loop(None)


def test_a_read_from_a_service_that_never_answers_is_bounded(unreachable_ssm: None) -> None:
    """A listener that accepts connections and never answers (as a dropped route would leave it): the read gives up
    within seconds, not botocore's default 60 s per attempt, and says the service is unreachable."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        probe = (
            "from stratus.handlers.secrets import settings_from_env, SecretUnavailableError\n"
            "try:\n    settings_from_env()\nexcept SecretUnavailableError as error:\n    print(error.setting)\n"
        )
        endpoint = {"AWS_ENDPOINT_URL_SSM": f"http://127.0.0.1:{silent.getsockname()[1]}"}
        started = time.monotonic()
        completed = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            timeout=30,
            env={**_environment(), **endpoint},
        )
        elapsed = time.monotonic() - started
    assert completed.stdout.strip() == "STRATUS_SECRET_KEY", completed.stderr
    assert elapsed < 15


def test_a_refused_secret_still_stops_the_start(moto_ssm: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No such parameter: no later try would fare better, so the start fails naming it (not a SecretUnavailable)."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", moto_ssm)
    with pytest.raises(SettingsError) as refused:
        settings_from_env({"STRATUS_SECRET_KEY": "ssm:/does/not/exist"})
    assert not isinstance(refused.value, SecretUnavailableError)
    assert "ssm:/does/not/exist" in str(refused.value)


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key.startswith(("AWS_", "STRATUS_", "PATH"))}


@pytest.mark.anyio
async def test_the_streaming_app_answers_readiness_and_the_buffered_503_until_ssm_answers_then_serves(
    unreachable_ssm: None, moto_ssm: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The app the streaming function serves, as `main` builds it: its start does not raise, `/health/live` answers,
    every call is the buffered function's 503 (same status, headers and body), and once SSM answers, the first
    call after the interval reads the secret and is served."""
    clock = FakeClock()
    caplog.set_level(logging.WARNING, logger="stratus.lambda")
    settings = ResolvedSettings()
    app = adapter_app(server, settings_without_secrets(), settings, monotonic=clock)
    buffered = _tools_list(DeferredStart(lambda: make_handler(server, ResolvedSettings()()), monotonic=clock))
    caplog.clear()  # the buffered handler's own try, which logged too
    body, headers = stateless_request("tools/list", {})
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        refused = [await http.post("/mcp", json=body, headers={**BASE_HEADERS, **headers}) for _ in range(3)]
        assert (await http.get("/health/live")).status_code == 200
        for answer in refused:
            assert answer.status_code == buffered["statusCode"] == 503
            assert dict(answer.headers) == {**buffered["headers"], "content-length": str(len(answer.content))}
            assert answer.json() == json.loads(buffered["body"])
        assert caplog.records == []  # within the interval: answered at once, no read, nothing logged again

        monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", moto_ssm)
        boto3.client("ssm").put_parameter(Name=PARAMETER, Value=SECRET_KEY, Type="SecureString", Overwrite=True)
        clock.advance(5.0)
        served = await http.post("/mcp", json=body, headers={**BASE_HEADERS, **headers})
        assert served.status_code == 200
        assert [tool["name"] for tool in served.json()["result"]["tools"]] == ["add", "forecast", "divide"]
        assert (await http.get("/health/live")).status_code == 200
    assert settings.settings is not None and settings.settings.secret_key == SECRET_KEY


@pytest.mark.uvicorn
def test_the_streaming_function_starts_without_a_route_to_ssm_passes_readiness_and_answers_503() -> None:
    """`python -m stratus.handlers.streaming` as run.sh starts it, SSM at a closed port: the process listens, the
    readiness check answers 200, a call is the 503 naming the setting (no exception text), the reason is logged
    once, and the process still shuts down cleanly."""
    port = free_port()
    environment = {
        **{key: value for key, value in os.environ.items() if not key.startswith(("STRATUS_", "AWS_"))},
        **AWS,
        "AWS_ENDPOINT_URL_SSM": f"http://127.0.0.1:{free_port()}",
        "AWS_LWA_PORT": str(port),
        "STRATUS_SECRET_KEY": f"ssm:{PARAMETER}",
        "STRATUS_APP": "tests.fixtures.sample_server:server",
        "STRATUS_TELEMETRY": "emf",  # as template.yaml deploys it: JSON log lines
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "stratus.handlers.streaming"],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        bufsize=0,  # unbuffered, so a line select() reported is read at once
    )
    try:
        printed = _lines_until(process, "Application startup complete", time.monotonic() + START_TIMEOUT_SECONDS)
        body, headers = stateless_request("tools/list", {})
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
            ready = http.get("/health/live")
            calls = [http.post("/mcp", json=body, headers={**BASE_HEADERS, **headers}) for _ in range(2)]
    finally:
        process.terminate()
        process.wait(timeout=10)
        assert process.stdout is not None
        printed += process.stdout.read().decode().splitlines()
        process.stdout.close()
    assert (ready.status_code, ready.json()) == (200, {"status": "ok"})
    for call in calls:
        assert (call.status_code, call.headers["retry-after"]) == (503, "5")
        error = call.json()["error"]
        assert error["code"] == -31503
        assert "STRATUS_SECRET_KEY" in error["message"]
        assert PARAMETER not in error["message"] and "Error" not in error["message"]
    logged = [json.loads(line) for line in printed if line.startswith("{") and "stratus.lambda" in line]
    deferred = [line for line in logged if line["message"] == "a secret is unreachable; starting without it"]
    assert len(deferred) == 1, printed
    assert deferred[0]["setting"] == "STRATUS_SECRET_KEY"
    assert "EndpointConnectionError" in deferred[0]["reason"]
    assert any("Application shutdown complete" in line for line in printed), printed


def _lines_until(process: subprocess.Popen[bytes], marker: str, deadline: float) -> list[str]:
    """What the process printed, line by line, up to the line holding `marker`; fails at `deadline`."""
    assert process.stdout is not None
    lines: list[str] = []
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while not lines or marker not in lines[-1]:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"no {marker!r} within {START_TIMEOUT_SECONDS} s: {lines}")
            if selector.select(remaining):
                line = process.stdout.readline()
                if not line:
                    pytest.fail(f"the streaming entry exited: {lines}")
                lines.append(line.decode().rstrip("\n"))
    return lines
