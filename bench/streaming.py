"""The streaming shape, started the way the AWS Lambda Web Adapter starts it, and measured over HTTP on 127.0.0.1.

The adapter runs the function's entry script, then sends `GET AWS_LWA_READINESS_CHECK_PATH` to the app's port
every 10 ms until an answer's status is 100-499, then forwards the first invocation (see the adapter's readiness
check documentation). So does `started`: it spawns the subject's entry, polls its readiness path on the same
schedule, sends the first tools/call, and reads the process's own accounting in /proc at that moment. The process
then stays up for the warm calls and the wrk run, and is ended by its PID.

Subjects, each in its own venv (benchenv.py):
  stratus  run.sh (`python -m stratus.handlers.streaming`), as template.yaml's StreamingFunction runs it
  stratus-built  the same from the package `sam build` produces, on the runtime's Python (bench/artifact.py)
  floor    bare Starlette + pydantic, one route (starlette_floor.py), under `python -m uvicorn`
  sdk      the official SDK's Streamable HTTP app (asgi_apps.py, stateless JSON), under `python -m uvicorn`
  fastmcp  FastMCP's HTTP app, the same way
Every request carries what the adapter adds (x-amzn-request-context), besides the benchmark's 2026-07-28 headers.
"""

from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import artifact
import measure
import wire

STREAMING_SUBJECTS = ("stratus", "floor", "sdk", "fastmcp")
BUILT = "stratus-built"
READINESS_PATH = "/health/live"  # template.yaml's AWS_LWA_READINESS_CHECK_PATH
READINESS_INTERVAL_S = 0.010  # the adapter's retry interval
READY_STATUSES = range(100, 500)  # the adapter's default AWS_LWA_READINESS_CHECK_HEALTHY_STATUS
START_SECONDS = 60.0
"""A subject not ready within this long failed (at a 0.29 vCPU share FastMCP takes several seconds)."""
STOP_SECONDS = 10.0
HEADERS = {
    **wire.STATELESS_HEADERS,
    "x-amzn-request-context": json.dumps(wire.STATELESS_CALL_EVENT["requestContext"], separators=(",", ":")),
}
_REQUESTS = re.compile(r"^\s*(\d+) requests in", re.MULTILINE)
_RATE = re.compile(r"^Requests/sec:\s*([\d.]+)", re.MULTILINE)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s*(\d+)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def entry(python: Path, subject: str, port: int, env: dict[str, str]) -> tuple[list[str], dict[str, str], Path]:
    """The command, environment and working directory the adapter's container would start the subject with."""
    if subject in ("stratus", BUILT):
        package = Path(env["LAMBDA_TASK_ROOT"]) if subject == BUILT else measure.REPO
        base = artifact.without_working_tree(env) if subject == BUILT else env
        settings = {
            "PATH": f"{python.parent}{os.pathsep}{base.get('PATH', '')}",  # run.sh runs `python`
            "AWS_LWA_PORT": str(port),
            "STRATUS_APP": "examples.add:server",
            "STRATUS_TRUST_REQUEST_CONTEXT_HEADER": "true",  # as template.yaml sets it behind the adapter
        }
        return ["sh", str(package / "run.sh")], {**base, **settings}, package
    module = "starlette_floor:app" if subject == "floor" else f"asgi_apps:{subject}"
    argv = [
        str(python), "-m", "uvicorn", module, "--app-dir", str(measure.BENCH), "--host", "127.0.0.1",
        "--port", str(port),
    ]  # fmt: skip
    return argv, env, measure.REPO


def cpu_ms(pid: int) -> float:
    """CPU time of every thread of `pid` so far, from /proc/<pid>/task/*/schedstat (nanoseconds, unlike the clock
    ticks of /proc/<pid>/stat); the time of `sh` before run.sh's exec counts too, the PID being the same."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            continue
    return total / 1e6


def memory_kib(pid: int) -> dict[str, int]:
    """The resident set now (VmRSS) and its peak (VmHWM) of `pid`, KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


class Client:
    """A minimal HTTP/1.1 client on one kept-alive connection: the request's bytes are built once, and an answer is
    read by its Content-Length (or to the last chunk), so the round trip is mostly the server's (http.client's own
    parsing would add a few hundred microseconds to each)."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending = b""

    def close(self) -> None:
        self.socket.close()

    def exchange(self, request: bytes) -> tuple[int, bytes]:
        """Send `request`, return the answer's status and body."""
        self.socket.sendall(request)
        head = self._until(b"\r\n\r\n")
        status_line, _, header_block = head.partition(b"\r\n")
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(b":") for line in header_block.split(b"\r\n"))
        }
        if b"content-length" in headers:
            body = self._exactly(int(headers[b"content-length"]))
        elif headers.get(b"transfer-encoding") == b"chunked":
            body = self._until(b"0\r\n\r\n")
        else:
            raise RuntimeError(f"an answer without a length: {head!r}")
        return int(status_line.split()[1]), body

    def _read(self) -> None:
        chunk = self.socket.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.pending += chunk

    def _until(self, marker: bytes) -> bytes:
        while marker not in self.pending:
            self._read()
        found, _, self.pending = self.pending.partition(marker)
        return found

    def _exactly(self, size: int) -> bytes:
        while len(self.pending) < size:
            self._read()
        found, self.pending = self.pending[:size], self.pending[size:]
        return found


def _request(method: str, path: str, body: str = "", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", *(f"{name}: {value}" for name, value in (headers or {}).items())]
    if body:
        lines.append(f"content-length: {len(body.encode())}")
    return ("\r\n".join(lines) + "\r\n\r\n" + body).encode()


READINESS_REQUEST = _request("GET", READINESS_PATH, headers={"host": "127.0.0.1", "user-agent": "bench-readiness"})
CALL_REQUEST = _request("POST", "/mcp", wire.STATELESS_CALL_BODY, HEADERS)


def _ready(port: int) -> bool:
    try:
        client = Client(port, timeout=1.0)
    except OSError:
        return False
    try:
        return client.exchange(READINESS_REQUEST)[0] in READY_STATUSES
    except OSError:
        return False
    finally:
        client.close()


def _check(subject: str, status: int, body: bytes) -> None:
    if status != 200 or b'"result"' not in body or b"3" not in body:
        raise RuntimeError(f"{subject} answered the first tools/call with {status}: {body[:300]!r}")


@dataclass
class Running:
    """A started subject: its process and port, and what its cold start measured."""

    process: subprocess.Popen[bytes]
    port: int
    cold: dict[str, float]


@contextmanager
def started(
    python: Path, subject: str, env: dict[str, str], preexec: Callable[[], None] | None = None
) -> Iterator[Running]:
    """The subject's entry spawned, ready and past its first tools/call; ended (by PID) on leaving."""
    port = _free_port()
    argv, child_env, cwd = entry(python, subject, port, env)
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(
            argv, env=child_env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors, preexec_fn=preexec
        )
        try:
            deadline = start + START_SECONDS
            while not _ready(port):
                if process.poll() is not None or time.perf_counter() > deadline:
                    errors.seek(0)
                    output = errors.read().decode(errors="replace")[-2000:]
                    raise RuntimeError(f"{subject} did not become ready (exit {process.poll()}):\n{output}")
                time.sleep(READINESS_INTERVAL_S)
            ready = time.perf_counter()
            client = Client(port)
            status, body = client.exchange(CALL_REQUEST)
            answered = time.perf_counter()
            cold = {
                "ready_ms": (ready - start) * 1e3,
                "wall_ms": (answered - start) * 1e3,
                "cpu_ms": cpu_ms(process.pid),
                **{f"{key}_kib": float(value) for key, value in memory_kib(process.pid).items()},
            }
            client.close()
            _check(subject, status, body)
            yield Running(process, port, cold)
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_SECONDS)


def warm(running: Running, calls: int, warmup: int) -> dict[str, float]:
    """`calls` sequential tools/calls on one kept-alive connection, as the adapter forwards invocations one at a
    time: median and p99 of the round trip (us, our client's share small), the server's CPU per call."""
    client = Client(running.port)
    try:
        for _ in range(warmup):
            client.exchange(CALL_REQUEST)
        samples = []
        cpu0 = cpu_ms(running.process.pid)
        for _ in range(calls):
            begin = time.perf_counter_ns()
            status, _ = client.exchange(CALL_REQUEST)
            samples.append((time.perf_counter_ns() - begin) / 1e3)
            if status != 200:
                raise RuntimeError(f"a warm tools/call was answered {status}")
        cpu = cpu_ms(running.process.pid) - cpu0
    finally:
        client.close()
    samples.sort()
    return {
        "median_us": statistics.median(samples),
        "p99_us": samples[min(len(samples) - 1, int(len(samples) * 0.99))],
        "cpu_per_call_us": cpu * 1e3 / calls,
    }


def _script(directory: Path) -> Path:
    headers = "".join(
        f"wrk.headers[{json.dumps(name)}] = {json.dumps(value)}\n" for name, value in HEADERS.items() if name != "host"
    )  # wrk sends the Host of the URL; a second one would be refused
    script = directory / "post.lua"
    script.write_text(f'wrk.method = "POST"\nwrk.body = [[{wire.STATELESS_CALL_BODY}]]\n{headers}')
    return script


def throughput(running: Running, wrk: str, seconds: float) -> dict[str, float]:
    """wrk with one connection (the adapter sends one invocation at a time per environment) for `seconds`:
    req/s, the server's CPU per request (us) and the count of non-2xx answers."""
    url = f"http://127.0.0.1:{running.port}/mcp"
    with tempfile.TemporaryDirectory() as scratch:
        load = [wrk, "-t1", "-c1", f"-d{seconds:g}s", "-s", str(_script(Path(scratch))), url]
        cpu0 = cpu_ms(running.process.pid)
        done = subprocess.run(load, capture_output=True, text=True, timeout=seconds + 30, check=True)
        cpu = cpu_ms(running.process.pid) - cpu0
    requests, rate = _REQUESTS.search(done.stdout), _RATE.search(done.stdout)
    if requests is None or rate is None:
        raise RuntimeError(f"wrk printed no rate:\n{done.stdout}")
    failed = _NON_2XX.search(done.stdout)
    return {
        "requests_per_s": float(rate.group(1)),
        "cpu_per_request_us": cpu * 1e3 / max(int(requests.group(1)), 1),
        "non_2xx": float(failed.group(1)) if failed else 0.0,
    }


def run(
    pythons: dict[str, Path],
    env: dict[str, str],
    *,
    overrides: dict[str, dict[str, str]],
    runs: int,
    calls: int,
    seconds: float,
    wrk: str | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """`runs` cold starts per subject of `pythons`, interleaved in rotating order after one untimed start each (it
    writes the .pyc files; the built package's are shipped), then one more process per subject for the warm calls
    and (with wrk) the throughput. `overrides` adds to `env` per subject."""
    subjects = tuple(pythons)

    def start(subject: str) -> Any:
        return started(pythons[subject], subject, {**env, **overrides.get(subject, {})})

    for subject in subjects:
        with start(subject):
            pass
    cold: dict[str, list[dict[str, float]]] = {subject: [] for subject in subjects}
    for round_ in range(runs):
        shift = round_ % len(subjects)
        for subject in subjects[shift:] + subjects[:shift]:
            with start(subject) as running:
                cold[subject].append(running.cold)
        log(f"  streaming cold round {round_ + 1}/{runs}")
    warm_figures, served = {}, {}
    if wrk is None:
        log("  wrk not found (apt-get install -y wrk): streaming throughput skipped")
    for subject in subjects:
        with start(subject) as running:
            warm_figures[subject] = warm(running, calls, warmup=max(50, calls // 10))
            if wrk is not None:
                served[subject] = throughput(running, wrk, seconds)
                if served[subject]["non_2xx"]:
                    raise RuntimeError(f"{subject} answered {served[subject]['non_2xx']:.0f} requests with an error")
        log(f"  streaming {subject}: warm median {warm_figures[subject]['median_us']:.0f} us")
    return {"cold": cold, "warm": warm_figures, "served": served}
