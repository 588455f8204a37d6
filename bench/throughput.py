"""Throughput under uvicorn, one worker, driven by wrk on 127.0.0.1: req/s and the server's CPU per request.

Each subject's ASGI app (asgi_apps.py) runs in its own venv's uvicorn; wrk (Debian's package) sends the same
2026-07-28 tools/call as the Lambda benchmark over keep-alive connections for a fixed time, bounded. Server CPU is
read from /proc/<pid>/stat before and after the timed run.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import measure
import wire

THROUGHPUT_SUBJECTS = ("stratus", "floor", "sdk", "fastmcp")
_REQUESTS = re.compile(r"^\s*(\d+) requests in", re.MULTILINE)
_RATE = re.compile(r"^Requests/sec:\s*([\d.]+)", re.MULTILINE)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s*(\d+)")


def wrk() -> str | None:
    return shutil.which("wrk")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_until_serving(port: int, server: subprocess.Popen[bytes], within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {server.returncode} before serving")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"uvicorn did not listen on {port} within {within:.0f} s")


def _script(directory: Path) -> Path:
    headers = "".join(
        f'wrk.headers["{name}"] = "{value}"\n' for name, value in wire.STATELESS_HEADERS.items() if name != "host"
    )  # wrk sends the Host of the URL
    script = directory / "post.lua"
    script.write_text(f'wrk.method = "POST"\nwrk.body = [[{wire.STATELESS_CALL_BODY}]]\n{headers}')
    return script


def run(python: Path, subject: str, env: dict[str, str], *, seconds: float, connections: int) -> dict[str, float]:
    """One subject's req/s, server CPU per request (us), and the number of non-2xx answers."""
    tool = wrk()
    if tool is None:
        raise RuntimeError("wrk is not installed (apt-get install -y wrk)")
    port = _free_port()
    argv = [
        str(python), "-m", "uvicorn", f"asgi_apps:{subject}", "--app-dir", str(measure.BENCH),
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--log-level", "warning", "--no-access-log",
    ]  # fmt: skip
    server = subprocess.Popen(argv, env=env, cwd=measure.REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_until_serving(port, server)
        url = f"http://127.0.0.1:{port}/mcp"
        with tempfile.TemporaryDirectory() as scratch:
            script = _script(Path(scratch))
            load = [tool, "-t1", f"-c{connections}", "-d1s", "-s", str(script), url]
            subprocess.run(load, capture_output=True, text=True, timeout=30, check=True)  # warm-up
            cpu0 = _cpu_seconds(server.pid)
            load[3] = f"-d{seconds:g}s"
            done = subprocess.run(load, capture_output=True, text=True, timeout=seconds + 30, check=True)
            cpu = _cpu_seconds(server.pid) - cpu0
        requests = int(_REQUESTS.search(done.stdout).group(1))  # type: ignore[union-attr]
        rate = float(_RATE.search(done.stdout).group(1))  # type: ignore[union-attr]
        failed = _NON_2XX.search(done.stdout)
        return {
            "requests_per_s": rate,
            "cpu_per_request_us": cpu * 1e6 / max(requests, 1),
            "non_2xx": float(failed.group(1)) if failed else 0.0,
        }
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
