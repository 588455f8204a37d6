"""`stratus serve --reload` (and `stratus local --reload`): the command runs in a child restarted when a Python file
under its folder changes, so an edit answers the next request instead of some requests, later."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from stratus.handlers.reload import changed, snapshot
from tests.fixtures.processes import end_process, free_port

APP = """
from stratus import McpServer

server = McpServer("reloading", "1")


@server.tool()
def version() -> str:
    return "{answer}"
"""
WAIT_SECONDS = 30.0


def test_a_snapshot_sees_python_files_added_edited_and_removed_outside_virtual_environments(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("a = 1\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "site.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    before = snapshot(tmp_path)
    assert list(before) == [tmp_path / "app.py"]
    os.utime(tmp_path / "app.py", (time.time() + 5, time.time() + 5))
    (tmp_path / "tools.py").write_text("")
    (tmp_path / ".venv" / "site.py").write_text("x = 1\n")
    assert changed(before, snapshot(tmp_path)) == [tmp_path / "app.py", tmp_path / "tools.py"]
    (tmp_path / "tools.py").unlink()
    assert changed(snapshot(tmp_path), before) == [tmp_path / "app.py"]


def _version(http: httpx.Client, url: str) -> str | None:
    """The tool's answer, or None while the server is (re)starting."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    }
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "version", "_meta": meta}}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "version",
    }
    try:
        answer = http.post(url, json=message, headers=headers)
    except httpx.TransportError:
        return None
    text: str = answer.json()["result"]["content"][0]["text"]
    return text


def _until(http: httpx.Client, url: str, expected: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    seen = None
    while time.monotonic() < deadline:
        seen = _version(http, url)
        if seen == expected:
            return
        time.sleep(0.1)  # polling another process's restart, bounded by the deadline
    raise AssertionError(f"the server answered {seen!r}, not {expected!r}, within {WAIT_SECONDS} s")


def test_serve_reload_answers_with_the_edited_code_and_stops_with_its_child(tmp_path: Path) -> None:
    app = tmp_path / "reloading_app.py"
    app.write_text(APP.format(answer="v1"))
    port = free_port()
    environment = {key: value for key, value in os.environ.items() if not key.startswith("STRATUS_")}
    command = [sys.executable, "-m", "stratus.handlers.cli", "serve", "--reload", "--app", "reloading_app:server"]
    url = f"http://127.0.0.1:{port}/mcp"
    with tempfile.TemporaryFile() as output:
        supervisor = subprocess.Popen(
            [*command, "--port", str(port)], cwd=tmp_path, env=environment, stdout=output, stderr=subprocess.STDOUT
        )
        try:
            with httpx.Client(timeout=5) as http:
                _until(http, url, "v1")
                app.write_text(APP.format(answer="v2"))
                os.utime(app, (time.time() + 2, time.time() + 2))  # a later time, whatever the clock's resolution
                _until(http, url, "v2")
                supervisor.send_signal(signal.SIGINT)
                assert supervisor.wait(20) == 0
                assert _version(http, url) is None  # the child ended with its supervisor
        finally:
            end_process(supervisor)
        output.seek(0)
        said = output.read().decode(errors="replace")
    assert f"stratus: reloading when a .py file under {tmp_path} changes" in said
    assert "stratus: reloading_app.py changed: restarting" in said
