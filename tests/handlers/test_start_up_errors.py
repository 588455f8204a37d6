"""Every start-up mistake is one line on stderr that names the setting (or the tool) and what to do, and a non-zero
exit: under `stratus serve`, and at a Lambda function's init, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stratus.handlers.cli import main

BAD_RETURN = """
import socket
from stratus import McpServer

server = McpServer("bad-return")


@server.tool()
def fine() -> int:
    return 1


@server.tool()
def connect(host: str) -> socket.socket:
    raise NotImplementedError
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for the apps a test writes; their modules are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("startup_"):
            del sys.modules[name]


def _err_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_serve_refuses_a_tool_whose_return_type_cannot_be_described_in_one_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "startup_bad_return.py").write_text(BAD_RETURN)
    assert main(["serve", "--app", "startup_bad_return:server"]) == 2
    [line] = _err_lines(capsys)
    assert "'connect'" in line and "socket.socket" in line and "STRATUS_APP" in line


@pytest.mark.parametrize(
    "entry", ["import stratus.handlers.buffered", "import stratus.handlers.streaming as s; s.main()"]
)
def test_a_lambda_function_init_prints_the_unusable_tool_in_one_line_and_exits_1(tmp_path: Path, entry: str) -> None:
    (tmp_path / "startup_bad_return.py").write_text(BAD_RETURN)
    done = subprocess.run(
        [sys.executable, "-c", entry],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "", "PYTHONPATH": str(tmp_path), "STRATUS_APP": "startup_bad_return:server"},
    )
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("stratus: ") and "'connect'" in line and "socket.socket" in line


VARIADIC = """
from stratus import McpServer

server = McpServer("variadic")


@server.tool()
def spread(*values: int) -> int:
    return sum(values)
"""

MISMATCHED_TEMPLATE = """
from stratus import McpServer

server = McpServer("mismatched")


@server.resource("weather://{city}/today")
def today(town: str) -> str:
    return town
"""


def test_a_variadic_tool_is_one_line_naming_the_tool_and_the_parameter(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "startup_variadic.py").write_text(VARIADIC)
    assert main(["serve", "--app", "startup_variadic:server"]) == 2
    [line] = _err_lines(capsys)
    assert line.startswith("stratus: STRATUS_APP (--app) names startup_variadic:server")
    assert "tool 'spread'" in line and "*values" in line and "declare each argument by name" in line
    assert "startup_variadic.py:" in line  # where it is declared


def test_a_template_whose_variable_differs_from_its_parameter_is_one_line_naming_both(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "startup_template.py").write_text(MISMATCHED_TEMPLATE)
    assert main(["serve", "--app", "startup_template:server"]) == 2
    [line] = _err_lines(capsys)
    assert "'weather://{city}/today'" in line and "['city']" in line and "['town']" in line
    assert "name each parameter after a variable" in line


def test_a_port_out_of_range_is_one_line_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "99999"]) == 2
    assert _err_lines(capsys) == ["stratus: --port='99999': must be a port number from 1 to 65535, e.g. 8000"]


def test_a_port_variable_that_is_not_a_number_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCP_HTTP_PORT", "abc")
    assert main(["serve"]) == 2
    assert _err_lines(capsys) == ["stratus: MCP_HTTP_PORT='abc': must be a port number from 1 to 65535, e.g. 8000"]


def test_every_start_up_mistake_is_told_at_once_one_line_each(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "startup_variadic.py").write_text(VARIADIC)
    monkeypatch.setenv("MCP_HTTP_PORT", "abc")
    monkeypatch.setenv("MCP_HTTP_MAX_SESSIONS", "many")
    monkeypatch.setenv("MCP_HTTP_SESSION_TIMEOUT", "soon")
    monkeypatch.setenv("STRATUS_LOG_LEVEL", "LOUD")
    assert main(["serve", "--app", "startup_variadic:server"]) == 2
    lines = _err_lines(capsys)
    assert all(line.startswith("stratus: ") for line in lines)
    assert len(lines) == 5
    assert [line.split("=")[0].split(":")[1].strip() for line in lines] == [
        "MCP_HTTP_MAX_SESSIONS",
        "MCP_HTTP_SESSION_TIMEOUT",
        "STRATUS_LOG_LEVEL",
        "STRATUS_APP (--app) names startup_variadic",
        "MCP_HTTP_PORT",
    ]
    assert "tool 'spread'" in lines[3]


@pytest.mark.usefixtures("aws_credentials")
def test_store_create_without_a_region_is_one_line_saying_to_set_aws_region(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    assert main(["store", "create", "--store", "dynamodb://stratus"]) == 2
    [line] = _err_lines(capsys)
    assert line.startswith("stratus: cannot create the table: no AWS region is set (NoRegionError)")
    assert "set AWS_REGION" in line


def test_a_lambda_function_init_prints_each_bad_setting_in_one_line_and_exits_1() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import stratus.handlers.buffered"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "", "STRATUS_LOG_LEVEL": "LOUD", "STRATUS_MCP_PATH": "mcp"},
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("stratus: STRATUS_") for line in lines)
    assert {line.split("=")[0] for line in lines} == {"stratus: STRATUS_LOG_LEVEL", "stratus: STRATUS_MCP_PATH"}


def test_a_file_name_given_for_the_app_module_is_answered_with_the_reference_meant(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "startup_named.py").write_text("from stratus import McpServer\n\nserver = McpServer('named')\n")
    assert main(["serve", "--app", "startup_named.py:server"]) == 2
    [line] = _err_lines(capsys)
    assert line.endswith("did you mean startup_named:server?")


def test_an_app_whose_own_import_fails_is_told_where_not_to_check_its_path(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "startup_broken.py").write_text("import os\nimport startup_not_installed_anywhere\n")
    assert main(["serve", "--app", "startup_broken:server"]) == 2
    [line] = _err_lines(capsys)
    assert f"({project / 'startup_broken.py'}:2)" in line
    assert line.endswith(
        "startup_broken imports 'startup_not_installed_anywhere', which is not installed or not on the path"
    )
    assert "PYTHONPATH" not in line
