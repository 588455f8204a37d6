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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PACKAGE_TREE = REPO / ".cache" / "bench-package"
"""Where scripts/link-package mirrors the working tree as the `stratus` package for the benchmark venvs."""


@dataclass(frozen=True)
class Spawned:
    """One finished child: what it printed, and what the kernel says it cost (wait4 rusage)."""

    stdout: str
    stderr: str
    cpu_ms: float
    wall_ms: float
    max_rss_kib: int


def working_tree_path() -> str:
    """`PYTHONPATH` that makes the working tree importable as installed: the repository (examples, the bench's own
    modules) and the `stratus` package mirrored by scripts/link-package."""
    if not (PACKAGE_TREE / "stratus").is_dir():
        subprocess.run(["bash", str(REPO / "scripts" / "link-package"), str(PACKAGE_TREE)], check=True)
    return f"{REPO}{os.pathsep}{PACKAGE_TREE}"


def child_env() -> dict[str, str]:
    """The parent's environment without STRATUS_* (the subject runs on defaults: the in-memory store) and PYTHON*
    (no bytecode or path surprises), with the working tree importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STRATUS_", "PYTHON", "VIRTUAL_ENV"))}
    env["PYTHONPATH"] = working_tree_path()
    return env


def spawn(argv: list[str], env: dict[str, str], preexec: Callable[[], None] | None = None) -> Spawned:
    """Run `argv` to completion; CPU is user + system of that child alone, from `os.wait4`. `preexec` runs in the
    child between fork and exec (joining a cpu cgroup: cpushare.py)."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors, env=env, cwd=REPO, preexec_fn=preexec)
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


def cold(python: Path, subject: str, env: dict[str, str], preexec: Callable[[], None] | None = None) -> dict[str, Any]:
    """One cold start of `subject` in a fresh process: the child's own figures plus the kernel's."""
    done = spawn([str(python), str(BENCH / "cold.py"), subject], env, preexec)
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


def _callgrind(python: Path, child: list[str], env: dict[str, str], out: str = "/dev/null") -> int:
    """Instructions executed by `python CHILD...` (callgrind's "Collected" total), its profile written to `out`."""
    tool = valgrind()
    assert tool is not None
    argv = [tool, "--tool=callgrind", f"--callgrind-out-file={out}", str(python), *child]
    done = spawn(argv, {**env, "PYTHONHASHSEED": "0"})  # same hashes each run: comparable counts
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"no 'Collected' line in callgrind's output:\n{done.stderr}")
    return int(found.group(1))


def instructions(python: Path, subject: str, env: dict[str, str]) -> int:
    """Instructions executed by a whole cold-start child of `subject`."""
    return _callgrind(python, [str(BENCH / "cold.py"), subject], env)


SESSION_CALLS = (50, 250)
"""The two call counts of the warm_session.py runs whose difference is the calls alone."""


def session_instructions(python: Path, subject: str, env: dict[str, str]) -> float:
    """Instructions per warm tools/call in a handshake-era session (bench/warm_session.py): two runs that parse
    the same events and differ only by the number of calls."""
    few, many = SESSION_CALLS
    child = [str(BENCH / "warm_session.py"), subject]
    totals = [_callgrind(python, [*child, str(count), str(many)], env) for count in (few, many)]
    return (totals[1] - totals[0]) / (many - few)


_ANNOTATED = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.+?)(?:\s+\[(.+)\])?$")


def _functions(profile: str) -> dict[tuple[str, str], int]:
    """Self instructions per (function, object file) of a callgrind profile, recursion levels merged (the annotated
    lines name a function's object only on some of its lines: the others take it from those)."""
    done = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--inclusive=no", profile], capture_output=True, text=True, check=True
    )
    counts: dict[str, int] = {}
    objects: dict[str, str] = {}
    for line in done.stdout.splitlines():
        match = _ANNOTATED.match(line)
        if match is None or "PROGRAM TOTALS" in line:
            continue
        function = match.group(2).rpartition(":")[2].split("'")[0]
        counts[function] = counts.get(function, 0) + int(match.group(1).replace(",", ""))
        if match.group(3):
            objects.setdefault(function, Path(match.group(3)).name)
    return {(function, objects.get(function, "?")): count for function, count in counts.items()}


def session_functions(python: Path, subject: str, env: dict[str, str]) -> dict[tuple[str, str], float]:
    """Instructions per warm tools/call by C function and object file: the difference of the two runs'
    profiles (callgrind_annotate), over the number of calls."""
    few, many = SESSION_CALLS
    child = [str(BENCH / "warm_session.py"), subject]
    with tempfile.TemporaryDirectory() as scratch:
        profiles = []
        for count in (few, many):
            out = str(Path(scratch) / f"callgrind.{count}")
            _callgrind(python, [*child, str(count), str(many)], env, out)
            profiles.append(_functions(out))
    return {key: (profiles[1].get(key, 0) - profiles[0].get(key, 0)) / (many - few) for key in profiles[1]}


def session_warm(python: Path, subject: str, calls: int, env: dict[str, str]) -> dict[str, Any]:
    """Timed warm tools/calls in a handshake-era session, a fresh event each (bench/warm_session.py)."""
    done = spawn([str(python), str(BENCH / "warm_session.py"), subject, str(calls), str(calls)], env)
    figures: dict[str, Any] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


def session_profile(python: Path, subject: str, batches: int, env: dict[str, str]) -> dict[str, Any]:
    """Sampled shares of a warm session call's time by module group (bench/profile_warm.py)."""
    done = spawn([str(python), str(BENCH / "warm_session.py"), subject, "0", "0", "--profile-warm", str(batches)], env)
    figures: dict[str, Any] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return figures


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
