"""The buffered handler's warm path on each supported CPython: Stratus beside the awslabs handler.

Each Python gets a venv with Stratus's runtime pins and the same awslabs release (benchenv.ensure_python_venv);
a Python pyenv does not have is skipped with a message. The child is bench/warm_session.py: tools/calls in a
handshake-era session, a fresh event each, timed, and counted in instructions per call by two callgrind runs that
differ only by the number of calls (measure.session_instructions).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import benchenv
import measure
import profile_functions
from profile_warm import HARNESS

VERSIONS = ("3.11", "3.12", "3.13")
SESSION_SUBJECTS = ("stratus", "stratus-emf", "stratus-stateless", "awslabs", "adapter")
PROFILED = ("stratus", "awslabs")
TIMED = ("median_us", "p99_us", "cpu_per_call_us")


def run(
    bench_python: Path,
    env: dict[str, str],
    *,
    calls: int,
    repeats: int,
    callgrind: bool,
    log: Callable[[str], None],
) -> dict[str, dict[str, dict[str, float]]]:
    """Python release (e.g. 3.12.1) -> subject -> median us, p99 us, CPU per call us (medians over `repeats`
    processes) and, with `callgrind`, instructions per call."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for version in VERSIONS:
        python = benchenv.ensure_python_venv(version, bench_python)
        if python is None:
            log(f"  Python {version} skipped: pyenv has no {version}.x (~/.pyenv/versions)")
            continue
        measured: dict[str, dict[str, float]] = {}
        release = version
        for subject in SESSION_SUBJECTS:
            runs = [measure.session_warm(python, subject, calls, env) for _ in range(repeats)]  # writes the .pyc too
            release = runs[0]["python"]
            figures = {key: statistics.median(run[key] for run in runs) for key in TIMED}
            if callgrind:
                figures["instructions"] = measure.session_instructions(python, subject, env)
            measured[subject] = figures
            counted = f", {figures['instructions'] / 1e3:,.0f} k instructions" if callgrind else ""
            log(f"  Python {release} {subject}: median {figures['median_us']:.0f} us{counted}")
        found[release] = measured
    return found


def profile(python: Path, env: dict[str, str], *, batches: int, subject: str = "stratus") -> dict[str, Any]:
    """Shares of `subject`'s warm session call by module group (bench/profile_warm.py), less the harness's own."""
    sampled = measure.session_profile(python, subject, batches, env)
    groups = {name: count for name, count in sampled["groups"].items() if not name.startswith("harness")}
    total = sum(groups.values()) or 1
    return {
        "python": sampled["python"],
        "samples": total,
        "groups": {name: count / total for name, count in sorted(groups.items(), key=lambda item: -item[1])},
        "modules": {name: count / total for name, count in sampled["modules"].items() if name not in HARNESS},
    }


def print_profile(python: Path, env: dict[str, str], *, batches: int, callgrind: bool) -> None:
    """`run.py --profile-warm`: where a warm session call goes, by module group and by module, for Stratus and
    awslabs; then (with valgrind) Stratus's instructions per call by C function."""
    functions = measure.session_functions(python, "stratus", env) if callgrind else {}
    for subject in PROFILED:
        shares = profile(python, env, batches=batches, subject=subject)
        print(f"{subject} warm tools/call in a session, Python {shares['python']}: {shares['samples']} samples")
        per_call = 0.0
        if callgrind:
            per_call = (
                sum(functions.values()) if subject == "stratus" else measure.session_instructions(python, subject, env)
            )
            print(f"  {per_call / 1e3:,.0f} k instructions per call (callgrind); by group: the share of the sampled")
            print("  time, and that share of the instructions")
        for name, share in shares["groups"].items():
            counted = f"  ~{share * per_call / 1e3:4.0f} k" if callgrind else ""
            print(f"  {share:6.1%}{counted}  {name}")
        print("  by module:")
        for name, share in list(shares["modules"].items())[:20]:
            print(f"  {share:6.1%}  {name}")
        print()
    if callgrind:
        print_components(python, env, sum(functions.values()))
    if functions:
        total = sum(functions.values())
        print(f"stratus: instructions per call by C function (callgrind, {total / 1e3:,.0f} k in all), top 25")
        for (function, library), count in sorted(functions.items(), key=lambda item: -item[1])[:25]:
            print(f"  {count / 1e3:7.1f} k  {count / total:6.1%}  {function}  ({library})")


def print_components(python: Path, env: dict[str, str], instructions: float) -> None:
    """Stratus's warm call by component and its costliest functions (bench/profile_functions.py: callgrind over
    `-X perf` trampolines, CPython 3.12 and later)."""
    functions = profile_functions.python_functions(python, "stratus", env)
    if not functions:
        print("stratus by component: skipped, this CPython has no -X perf (3.12 and later)\n")
        return
    print(f"stratus: instructions per call by component ({instructions / 1e3:,.0f} k in all; callgrind, -X perf)")
    for name, count in profile_functions.components(functions, instructions).items():
        print(f"  {count / 1e3:7.1f} k  {name}")
    print("stratus: inclusive instructions per call by Python function (with -X perf's trampolines), top 30")
    for name, count in profile_functions.stratus_functions(functions):
        qualname, _, path = name.partition(":")
        print(f"  {count / 1e3:7.1f} k  {qualname}  ({path.rsplit('/stratus/', 1)[-1]})")
    print()
