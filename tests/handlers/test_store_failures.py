"""A store that fails says why and what fixes it: Redis not running, a DynamoDB table that does not exist, no AWS
region. `stratus serve` probes the store before it binds a port and stops with that one line; a request that finds
the store failing is answered 503 while the log names the cause."""

from __future__ import annotations

import socket

import httpx
import pytest

from examples.demo import server
from stratus import Settings, build_app
from stratus.handlers.cli import main
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.wire import BASE_HEADERS, initialize_message

pytestmark = pytest.mark.anyio


def closed_port() -> int:
    """A port nothing listens on once the probe closes."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve_fails(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["serve", "--port", "1", *args]) == 2
    printed = capsys.readouterr()
    assert "Serving" not in printed.out
    [line] = printed.err.strip().splitlines()
    return line


@pytest.fixture
def shared_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATUS_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("STRATUS_STORE_TIMEOUT_SECONDS", "0.5")


@pytest.mark.usefixtures("shared_store")
def test_serve_with_redis_not_running_stops_naming_the_address_and_how_to_start_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = closed_port()
    line = _serve_fails(capsys, "--store", f"redis://:hunter2@127.0.0.1:{port}/0")
    assert line.startswith("stratus: STRATUS_STORE: Redis at 127.0.0.1:")
    assert "ConnectionError" in line and f"start Redis at 127.0.0.1:{port}" in line
    assert "hunter2" not in line


@pytest.mark.usefixtures("shared_store", "aws_credentials")
def test_serve_with_a_missing_table_stops_naming_the_table_and_the_command_that_creates_it(
    moto_server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_server)
    line = _serve_fails(capsys, "--store", "dynamodb://no-such-table")
    assert "ResourceNotFoundException" in line and "us-east-1" in line
    assert "`stratus store create --store dynamodb://no-such-table`" in line


@pytest.mark.usefixtures("shared_store", "aws_credentials")
def test_serve_without_an_aws_region_stops_saying_to_set_aws_region(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    line = _serve_fails(capsys, "--store", "dynamodb://stratus")
    assert "NoRegionError" in line and "set AWS_REGION" in line


@pytest.mark.usefixtures("aws_credentials")
async def test_a_request_that_finds_the_table_missing_is_503_and_the_log_says_why(
    moto_server: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_server)
    settings = Settings(store="dynamodb://gone", secret_key=SECRET_KEY, store_timeout_seconds=1.0)
    app = build_app(server, settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        answer = await http.post("/mcp", json=initialize_message(), headers=BASE_HEADERS)
    await app.shutdown()
    assert answer.status_code == 503
    assert answer.json()["error"]["data"] == {"setting": "STRATUS_STORE"}
    assert "gone" not in answer.text and "ResourceNotFound" not in answer.text  # the cause is the operator's
    assert "the DynamoDB table gone does not exist" in caplog.text
    assert "stratus store create --store dynamodb://gone" in caplog.text
