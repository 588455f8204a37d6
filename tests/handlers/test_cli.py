"""`stratus serve` validates its configuration before it binds a port, and stops within its grace period."""

from __future__ import annotations

import signal
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from examples.demo import server as demo_server
from stratus import Settings
from stratus.handlers.cli import SHUTDOWN_GRACE_SECONDS, main
from stratus.handlers.loading import DEMO_APP, app_reference, load_served
from stratus.stores.dynamodb.client import dynamodb_client
from tests.fixtures.processes import ServerUrl, stratus_process
from tests.fixtures.wire import BASE_HEADERS, initialize_message


def test_an_unusable_store_exits_2_with_a_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--store", "dynamo://x"]) == 2
    assert "STRATUS_STORE" in capsys.readouterr().err


def test_an_app_that_is_not_a_server_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--app", "tests.fixtures.sample_server:Unit"]) == 2
    assert "is not an McpServer" in capsys.readouterr().err


def test_store_create_makes_the_table_with_its_ttl(
    aws_credentials: None, moto_server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_server)
    assert main(["store", "create", "--store", "dynamodb://cli-created"]) == 0
    assert "Created DynamoDB table cli-created" in capsys.readouterr().out
    client = dynamodb_client(timeout=2.0)
    description = client.describe_table(TableName="cli-created")["Table"]
    assert [key["AttributeName"] for key in description["KeySchema"]] == ["PK", "SK"]
    ttl = client.describe_time_to_live(TableName="cli-created")["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires"
    client.delete_table(TableName="cli-created")


def test_store_create_refuses_other_stores(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "create", "--store", "memory://"]) == 2
    assert "only dynamodb://" in capsys.readouterr().err


@pytest.mark.uvicorn
def test_stratus_serve_stops_within_its_grace_period_with_a_stream_open() -> None:
    with stratus_process("tests.fixtures.sample_server:server", {}) as url:
        assert isinstance(url, ServerUrl)
        with httpx.Client(base_url=url, timeout=10) as http:
            opened = http.post("/mcp", json=initialize_message(), headers=BASE_HEADERS)
            headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
            with http.stream("GET", "/mcp", headers={**headers, "accept": "text/event-stream"}) as stream:
                assert stream.status_code == 200
                url.process.send_signal(signal.SIGTERM)
                # Without the grace period uvicorn would wait for this stream for as long as it stays open.
                exit_status = url.process.wait(timeout=SHUTDOWN_GRACE_SECONDS + 5)
    assert exit_status in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it stopped for


def test_serve_finds_the_app_in_the_folder_it_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stratus serve --app app:server` in a user's project imports the project's module, as uvicorn would."""
    (tmp_path / "userapp_probe.py").write_text("thing = 1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path if entry not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "userapp_probe", raising=False)
    assert main(["serve", "--app", "userapp_probe:thing"]) == 2
    assert "userapp_probe:thing is not an McpServer" in capsys.readouterr().err
    monkeypatch.delitem(sys.modules, "userapp_probe", raising=False)


def test_version_prints_the_distribution_version(capsys: pytest.CaptureFixture[str]) -> None:
    import stratus
    from stratus.version import __version__

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"stratus {__version__}"
    assert stratus.__version__ == __version__


def test_local_without_its_extra_names_the_package_and_the_install_command() -> None:
    import subprocess

    hide_httpx = (
        "import sys; sys.modules['httpx'] = None; from stratus.handlers.cli import main; sys.exit(main(['local']))"
    )
    done = subprocess.run([sys.executable, "-c", hide_httpx], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "stratus: stratus local needs the httpx package, which is not installed: pip install 'stratus-mcp[local]'"
    ]


def test_an_app_attribute_the_module_lacks_names_the_module_and_its_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "userapp_lacks.py").write_text("from stratus import McpServer\nserver = McpServer('x', '1')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "userapp_lacks", raising=False)
    assert main(["serve", "--app", "userapp_lacks:srv"]) == 2
    err = capsys.readouterr().err
    assert "module 'userapp_lacks' has no attribute 'srv'" in err
    assert "its McpServer: server" in err
    assert "--app userapp_lacks:server" in err
    monkeypatch.delitem(sys.modules, "userapp_lacks", raising=False)


def test_serve_refuses_a_bad_log_level_before_serving(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("STRATUS_LOG_LEVEL", "LOUD")
    assert main(["serve", "--port", "1"]) == 2
    printed = capsys.readouterr()
    assert "Serving" not in printed.out
    assert "STRATUS_LOG_LEVEL='LOUD'" in printed.err


def test_an_unset_app_serves_the_demo_in_a_checkout_and_a_set_one_wins() -> None:
    assert app_reference(Settings()) == DEMO_APP == "examples.demo:server"
    assert app_reference(Settings(app="examples.add:server")) == "examples.add:server"
    assert load_served(Settings()) is demo_server


@pytest.mark.uvicorn
def test_serve_says_at_start_what_the_app_registered() -> None:
    with tempfile.TemporaryFile() as output:
        with stratus_process("examples.demo:server", {}, output=output):
            pass
        output.seek(0)
        printed = output.read().decode()
    assert (
        "Registered 3 tools (add, forecast, divide), 1 resource (demo://notes/welcome), "
        "1 resource template (demo://cities/{city}/population), 1 prompt (greeting)\n"
    ) in printed


def test_serve_over_stdio_says_what_the_app_registered_on_stderr_only() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "stratus.handlers.cli", "serve", "--transport", "stdio", "--app", "examples.add:server"],
        input="",  # a pipe the client closes at once: the server ends
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout == ""  # stdout carries MCP messages only
    assert done.stderr.splitlines()[0] == "Registered 1 tool (add), 0 resources, 0 resource templates, 0 prompts"
