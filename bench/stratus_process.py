"""`stratus serve` in a process of its own for the benchmarks that measure across processes; ended by its PID."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
START_SECONDS = 20.0
Process = subprocess.Popen[bytes]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(*arguments: str, environment: dict[str, str] | None = None) -> Iterator[tuple[str, Process]]:
    """`stratus serve ARGUMENTS` with only `environment`'s STRATUS_* settings; yields its base URL and process."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATUS_")} | (environment or {})
    command = [sys.executable, "-m", "stratus.handlers.cli", "serve", *arguments, "--port", str(port)]
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("stratus serve did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # an open stream holds up uvicorn's graceful shutdown
                process.kill()
                process.wait(timeout=10)
