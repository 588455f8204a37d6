"""Spawning benchmark children and reading back what they measured."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent


@dataclass(frozen=True)
class Spawned:
    """One finished child: what it printed, and what the kernel says it cost (wait4 rusage)."""

    stdout: str
    stderr: str
    cpu_ms: float
    wall_ms: float
    max_rss_kib: int


def child_env() -> dict[str, str]:
    """The parent's environment without STRATUS_* (the subject runs on defaults: the in-memory store) and PYTHON*
    (no bytecode or path surprises), with the working tree importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STRATUS_", "PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = str(REPO)
    return env


def spawn(argv: list[str], env: dict[str, str]) -> Spawned:
    """Run `argv` to completion; CPU is user + system of that child alone, from `os.wait4`."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, env=env, cwd=REPO)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{err}")
    return Spawned(
        stdout=out.decode(),
        stderr=err,
        cpu_ms=(usage.ru_utime + usage.ru_stime) * 1e3,
        wall_ms=wall * 1e3,
        max_rss_kib=usage.ru_maxrss,
    )


def cold(python: Path, subject: str, env: dict[str, str]) -> dict[str, Any]:
    """One cold start of `subject` in a fresh process: the child's own figures plus the kernel's."""
    done = spawn([str(python), str(BENCH / "cold.py"), subject], env)
    figures: dict[str, Any] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    figures.update(process_cpu_ms=done.cpu_ms, process_wall_ms=done.wall_ms, max_rss_kib=figures.pop("peak_rss_kib"))
    return figures


def bare_interpreter(python: Path, env: dict[str, str]) -> Spawned:
    """`python -c pass`: the interpreter's own start and exit."""
    return spawn([str(python), "-c", "pass"], env)


def warm(python: Path, subject: str, calls: int, warmup: int, env: dict[str, str]) -> dict[str, Any]:
    """Warm latency of `subject`'s handler, measured in one fresh process."""
    done = spawn([str(python), str(BENCH / "warm.py"), subject, str(calls), str(warmup)], env)
    figures: dict[str, Any] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def asgi(python: Path, subject: str, calls: int, env: dict[str, str]) -> dict[str, float]:
    """Warm latency of `subject`'s ASGI app driven in-process, no server or adapter (bench/asgi_warm.py)."""
    done = spawn([str(python), str(BENCH / "asgi_warm.py"), subject, str(calls), str(max(200, calls // 10))], env)
    figures: dict[str, float] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def pipeline(python: Path, calls: int, env: dict[str, str]) -> dict[str, float]:
    """Medians of a warm tools/call without the pipeline, through it, and through it with limits (bench/pipeline.py)."""
    done = spawn([str(python), str(BENCH / "pipeline.py"), str(calls)], env)
    figures: dict[str, float] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def stores(calls: int) -> dict[str, Any]:
    """Round trips, latency per backend and Redis memory per session (bench/stores.py, in the project's venv:
    the store clients and moto are the project's dev dependencies, not the anchors')."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = spawn([sys.executable, str(BENCH / "stores.py"), str(calls)], env)
    figures: dict[str, Any] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def notify(events: int) -> dict[str, float]:
    """Cross-process notification latency over Redis and an idle stream's Redis commands (bench/notify.py)."""
    done = spawn([sys.executable, str(BENCH / "notify.py"), "--events", str(events)], {**os.environ})
    figures: dict[str, float] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def gateway(calls: int) -> dict[str, float]:
    """A tools/call through a gateway beside the same call to its upstream, and its cached tools/list
    (bench/gateway.py)."""
    done = spawn([sys.executable, str(BENCH / "gateway.py"), "--calls", str(calls)], {**os.environ})
    figures: dict[str, float] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def scale_tools(python: Path, tools: int, calls: int, env: dict[str, str]) -> dict[str, float]:
    """A server of `tools` tools: cold start, RSS, warm tools/call and tools/list (bench/scale_tools.py)."""
    done = spawn([str(python), str(BENCH / "scale_tools.py"), str(tools), str(calls)], env)
    figures: dict[str, float] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def scale_sessions(calls: int, levels: list[int]) -> list[dict[str, float]]:
    """Latency, census time and Redis memory as live sessions grow through `levels` (bench/scale_sessions.py)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = spawn([sys.executable, str(BENCH / "scale_sessions.py"), str(calls), *map(str, levels)], env)
    figures: list[dict[str, float]] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def charts(python: Path, results: dict[str, Any], out: Path) -> None:
    """The report's PNG charts, drawn by bench/charts.py in the bench venv."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as data:
        data.write(json.dumps(results))
        data.flush()
        spawn([str(python), str(BENCH / "charts.py"), data.name, str(out)], {**os.environ})


_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def valgrind() -> str | None:
    return shutil.which("valgrind")


def instructions(python: Path, subject: str, env: dict[str, str]) -> int:
    """Instructions executed by a whole cold-start child of `subject` (callgrind's "Collected" total)."""
    tool = valgrind()
    assert tool is not None
    argv = [tool, "--tool=callgrind", "--callgrind-out-file=/dev/null", str(python), str(BENCH / "cold.py"), subject]
    done = spawn(argv, {**env, "PYTHONHASHSEED": "0"})  # same hashes each run: comparable counts
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"no 'Collected' line in callgrind's output:\n{done.stderr}")
    return int(found.group(1))


def importtime(python: Path, subject: str, env: dict[str, str]) -> list[tuple[int, int, str]]:
    """`-X importtime` of a cold-start child: (self us, cumulative us, module), in import order."""
    done = spawn([str(python), "-X", "importtime", str(BENCH / "cold.py"), subject], env)
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append((int(own), int(cumulative), name.rstrip()))
    return rows


def profile(python: Path, subject: str, calls: int, env: dict[str, str]) -> str:
    """cProfile of `calls` warm calls of `subject`, top functions by own time."""
    return spawn([str(python), str(BENCH / "warm.py"), subject, "0", "500", "--profile", str(calls)], env).stdout
