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
