"""The buffered function starts, and its SnapStart snapshot is taken, even when SSM is out of reach (a VPC without
an endpoint for it): its secret is read on a later invocation, and until then every call is a 503 naming the
setting. Reads go through real botocore to 127.0.0.1: a closed port, a listener that never answers, moto's server."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import snapshot_restore_py

from examples.demo import server
from stratus.handlers.adapter import make_handler
from stratus.handlers.deferred import DeferredStart, ResolvedSettings
from stratus.handlers.secrets import SecretUnavailableError, settings_from_env
from stratus.settings import SettingsError
from tests.fixtures.clocks import FakeClock
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
from tests.fixtures.moto_server import SerialMotoServer
from tests.fixtures.processes import free_port
from tests.fixtures.snapstart_runtime import snapstart_registries

PARAMETER = "/stratus/secret-key"


@pytest.fixture
def unreachable_ssm(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """SSM at a 127.0.0.1 port nothing listens on, and the secret key named by reference, as template.yaml does."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("STRATUS_SECRET_KEY", f"ssm:{PARAMETER}")
    monkeypatch.setenv("STRATUS_APP", "examples.demo:server")


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
        boto3.client("ssm").put_parameter(Name=PARAMETER, Value="from-ssm", Type="SecureString")
        assert _tools_list(handler)["statusCode"] == 503  # within the interval: answered at once, no read

        clock.advance(5.0)
        answer = _tools_list(handler)
        assert answer["statusCode"] == 200
        assert [tool["name"] for tool in json.loads(answer["body"])["result"]["tools"]] == ["add", "forecast", "divide"]
        assert settings.settings is not None and settings.settings.secret_key == "from-ssm"
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
