"""SnapStart: under a snapshot init the buffered handler registers hooks that prime the app and rebuild it after a
restore (run here as Lambda's runtime would, through snapshot_restore_py's registries); otherwise it registers
nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import snapshot_restore_py
from botocore.stub import Stubber

from stratus import Settings
from stratus.handlers.adapter import make_handler
from stratus.handlers.secrets import settings_from_env
from stratus.handlers.snapstart import SnapStartHandler, priming_event, snapstart_aware
from tests.fixtures.sample_server import server as sample_server
from tests.fixtures.snapstart_runtime import snapstart_registries


@pytest.fixture
def runtime_registries() -> Iterator[None]:
    with snapstart_registries():
        yield


def run_hooks(registry: list[Any]) -> None:
    for hook, args, kwargs in registry:
        hook(*args, **kwargs)


def test_under_a_snapshot_init_the_app_is_primed_and_rebuilt_after_restore(
    runtime_registries: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "snap-start")
    builds: list[Any] = []

    def build() -> Any:
        builds.append(make_handler(sample_server, Settings()))
        return builds[-1]

    handler = snapstart_aware(build, "/mcp")
    assert isinstance(handler, SnapStartHandler)
    run_hooks(snapshot_restore_py.get_before_snapshot())  # primes: raises unless tools/list answered 200
    run_hooks(snapshot_restore_py.get_after_restore())
    assert len(builds) == 2 and handler.current is builds[1]  # a fresh app (and stores) after the restore

    event = priming_event("/mcp")
    answer = handler(event, type("Context", (), {"get_remaining_time_in_millis": lambda self: 30_000})())
    assert answer["statusCode"] == 200
    assert [tool["name"] for tool in json.loads(answer["body"])["result"]["tools"]] == ["add", "forecast", "divide"]


def test_an_ordinary_cold_start_registers_no_hooks(runtime_registries: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand")
    handler = snapstart_aware(lambda: make_handler(sample_server, Settings()), "/mcp")
    assert not isinstance(handler, SnapStartHandler)
    assert snapshot_restore_py.get_before_snapshot() == [] and snapshot_restore_py.get_after_restore() == []


def test_a_restored_copy_reads_its_secrets_again_while_a_rebuild_before_it_reads_none(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Stubber answers two reads: the snapshot's init, then the restore's. A build between them (a deferred
    start retried) would fail on the Stubber's empty queue if it read."""
    ssm = boto3.client("ssm", region_name="us-east-1")
    monkeypatch.setattr(boto3, "client", lambda *args, **kwargs: ssm)
    keys: list[str] = []

    def build() -> Any:
        settings = settings_from_env({"STRATUS_SECRET_KEY": "ssm:/stratus/key"})
        keys.append(str(settings.secret_key))
        return lambda event, context: {"statusCode": 200}

    def parameter(value: str) -> dict[str, Any]:
        return {"Parameter": {"Name": "/stratus/key", "Type": "SecureString", "Value": value, "Version": 1}}

    with Stubber(ssm) as stubber:
        stubber.add_response("get_parameter", parameter("at-snapshot"))
        handler = SnapStartHandler(build, "/mcp")
        build()
        stubber.add_response("get_parameter", parameter("at-restore"))
        handler.restore()
        stubber.assert_no_pending_responses()
    assert keys == ["at-snapshot", "at-snapshot", "at-restore"]
