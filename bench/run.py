"""Cold start and warm latency of Stratus's buffered Lambda handler, beside the floor and the awslabs anchor.

    make bench                                # full run (a few minutes), rewrites docs/benchmarks.md
    .venv/bin/python bench/run.py --quick     # fewer runs, no callgrind, prints only
    .venv/bin/python bench/run.py --smoke     # every subject and measurement once, in seconds (CI: make test)
    .venv/bin/python bench/run.py --profile   # hot spots: -X importtime of the cold start, cProfile of warm calls
    .venv/bin/python bench/run.py --profile-warm        # where a warm session call goes: module groups, C functions
    .venv/bin/python bench/run.py --only streaming      # one part alone, printed: streaming, cpu-share or pythons

Subjects, all run by the same interpreter (see benchenv.py for their venvs):
  stratus  `examples/add.py`'s module-level `handler` (in-memory store, default settings)
  floor    bare Mangum + Starlette + pydantic with one route (bench/floor_app.py): what our stack costs at least
  awslabs  the same one-tool server on `awslabs-mcp-lambda-handler` (bench/awslabs_app.py)
  sdk      the same on the official MCP Python SDK 2.x under Mangum (bench/sdk_app.py)
  fastmcp  the same on FastMCP under Mangum (bench/fastmcp_app.py)
  rmsl     the same on run-mcp-servers-with-aws-lambda: a stdio server started per request (bench/rmsl_app.py)
Every subject answers the same API Gateway HTTP API v2 tools/call event (bench/wire.py). The streaming shape
(bench/streaming.py) starts Stratus's run.sh and the others' apps under uvicorn as the Lambda Web Adapter would;
the CPU-share mode (bench/cpushare.py) repeats the cold starts inside a cgroup at Lambda's CPU share for 512 MB and
1,769 MB; the warm path per Python (bench/pythons.py) runs on CPython 3.11, 3.12 and 3.13. This is a benchmark,
not a test: it reports, it never fails on a timing.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import artifact
import backends
import benchenv
import cpushare
import figures
import measure
import pythons as per_python
import report
import streaming
import throughput
from tables import LABELS, SUBJECTS, markdown_table, text_table

DOCS = measure.REPO / "docs" / "benchmarks.md"
WARM_SUBJECTS = ("stratus", "stratus-legacy", "floor", "awslabs", "sdk", "fastmcp", "rmsl")
SLOW_SUBJECTS = {"rmsl": 20}
"""Subjects that start a process per request get this many warm calls per process (and a tenth as warm-up)."""
SMOKE_SLOW_CALLS = 3
"""... and this many in a smoke run, which only keeps them working."""
PARTS = ("streaming", "cpu-share", "pythons")
SMOKE_SHARE_SUBJECTS = ("stratus", "floor")
"""A smoke run's CPU-share mode starts only these (each at 0.29 vCPU takes 3.4 times its wall time)."""
UNTRACEABLE = ("rmsl",)
"""Subjects whose work happens mostly in a child process: callgrind, which follows one process, would mislead."""
Pythons = dict[str, Path]
"""The interpreter (venv) each subject runs in; "bare" and "stratus-legacy" use Stratus's."""


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def _spread(values: Sequence[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}"


def _python(pythons: Pythons, subject: str) -> Path:
    return pythons.get(subject, pythons["stratus"])


def run_cold(
    pythons: Pythons, runs: int, env: dict[str, str], backends: dict[str, dict[str, str]]
) -> tuple[dict[str, list[dict[str, Any]]], list[float]]:
    """`runs` cold starts per subject, interleaved (the order rotates each round), plus `python -c pass`. Stratus
    also starts on each shared store (`backends`: subject -> environment overrides)."""
    subjects = (*SUBJECTS, *backends, "bare")
    for subject in subjects:  # once untimed: writes the .pyc files every later run reads
        measure.cold(_python(pythons, subject), subject, {**env, **backends.get(subject, {})})
    results: dict[str, list[dict[str, Any]]] = {subject: [] for subject in subjects}
    bare_cpu: list[float] = []
    order = [*subjects, "python -c pass"]
    for round_ in range(runs):
        shift = round_ % len(order)
        for subject in order[shift:] + order[:shift]:
            if subject == "python -c pass":
                bare_cpu.append(measure.bare_interpreter(pythons["stratus"], env).cpu_ms)
                continue
            figures = measure.cold(_python(pythons, subject), subject, {**env, **backends.get(subject, {})})
            if figures["status"] != 200 or "3" not in figures["body"]:
                raise RuntimeError(f"{subject} answered the cold tools/call with {figures!r}")
            results[subject].append(figures)
        _log(f"  cold round {round_ + 1}/{runs}")
    return results, bare_cpu


def run_callgrind(pythons: Pythons, env: dict[str, str], built: dict[str, dict[str, str]]) -> dict[str, int] | None:
    """Instructions per cold-start child, and for the subjects the span alone (child minus the bare harness)."""
    if measure.valgrind() is None:
        _log("  valgrind not found: instruction counts skipped")
        return None
    totals = {}
    for subject in ("bare", *(subject for subject in SUBJECTS if subject not in UNTRACEABLE), *built):
        started = time.perf_counter()
        totals[subject] = measure.instructions(_python(pythons, subject), subject, {**env, **built.get(subject, {})})
        _log(f"  callgrind {subject}: {totals[subject]:,} instructions ({time.perf_counter() - started:.0f} s)")
    return totals


def run_warm(
    pythons: Pythons, calls: int, repeats: int, env: dict[str, str], slow_calls: int | None = None
) -> dict[str, dict[str, Any]]:
    """Warm latency per subject: `repeats` fresh processes each (interleaved), samples pooled; `slow_calls`
    replaces SLOW_SUBJECTS' counts."""
    pooled: dict[str, list[float]] = {subject: [] for subject in WARM_SUBJECTS}
    cpu: dict[str, list[float]] = {subject: [] for subject in WARM_SUBJECTS}
    kinds: dict[str, dict[str, list[float]]] = {subject: {} for subject in WARM_SUBJECTS}
    for repeat in range(repeats):
        for subject in WARM_SUBJECTS:
            count = min(calls, (slow_calls or SLOW_SUBJECTS[subject]) if subject in SLOW_SUBJECTS else calls)
            warmup = max(1, count // 10) if subject in SLOW_SUBJECTS else max(200, calls // 10)
            figures = measure.warm(_python(pythons, subject), subject, count, warmup=warmup, env=env)
            pooled[subject].extend(figures["samples_us"])
            cpu[subject].append(figures["cpu_per_call_us"])
            for kind, median in figures["kinds_us"].items():
                kinds[subject].setdefault(kind, []).append(median)
        _log(f"  warm round {repeat + 1}/{repeats}")
    summary: dict[str, dict[str, Any]] = {}
    for subject, samples in pooled.items():
        samples.sort()
        summary[subject] = {
            "median_us": _median(samples),
            "p99_us": samples[min(len(samples) - 1, int(len(samples) * 0.99))],
            "cpu_per_call_us": _median(cpu[subject]),
            "calls": float(len(samples)),
            "kinds_us": {kind: _median(values) for kind, values in kinds[subject].items()},
        }
    return summary


def run_throughput(pythons: Pythons, env: dict[str, str], *, seconds: float) -> dict[str, dict[str, float]]:
    """req/s and server CPU per request under uvicorn, per subject with an ASGI app (awslabs has none)."""
    if throughput.wrk() is None:
        _log("  wrk not found (apt-get install -y wrk): throughput skipped")
        return {}
    served = {}
    for subject in throughput.THROUGHPUT_SUBJECTS:
        served[subject] = throughput.run(_python(pythons, subject), subject, env, seconds=seconds, connections=16)
        if served[subject]["non_2xx"]:
            raise RuntimeError(f"{subject} answered {served[subject]['non_2xx']:.0f} requests with an error status")
        _log(f"  {subject}: {served[subject]['requests_per_s']:.0f} req/s")
    return served


def run_pipeline(python: Path, calls: int, repeats: int, env: dict[str, str]) -> dict[str, float]:
    """What the pipeline adds to a warm tools/call, medians over `repeats` fresh processes."""
    runs = [measure.pipeline(python, calls, env) for _ in range(repeats)]
    return {key: _median([run[key] for run in runs]) for key in runs[0]}


def machine_note(pythons: Pythons) -> list[str]:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "-C", str(measure.REPO), "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()
    python = pythons["stratus"]
    versions = benchenv.versions(python)
    packages = ", ".join(f"{name} {version}" for name, version in versions.items() if name != "python")
    anchors = []
    for name in benchenv.ANCHOR_PACKAGES:
        theirs = benchenv.versions(pythons[name])
        listed = ", ".join(f"{package} {version}" for package, version in theirs.items() if package != "python")
        anchors.append(f"{LABELS[name]} venv ({pythons[name]}): {listed}")
    return [
        f"{model}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
        f"Python {versions['python']} ({python}); {packages}",
        *anchors,
        f"Stratus working tree at {commit or 'unknown commit'}",
    ]


def hot_spots(python: Path, env: dict[str, str]) -> None:
    """Where Stratus's cold start and warm path spend their time."""
    rows = measure.importtime(python, "stratus", env)
    floor = {name.strip() for _, _, name in measure.importtime(python, "floor", env)}
    print("Stratus cold start, -X importtime: biggest self times (us) of modules the floor does not import")
    extra = [row for row in rows if row[2].strip() not in floor]
    for own, cumulative, name in sorted(extra, reverse=True)[:25]:
        print(f"  {own:>7} self {cumulative:>8} cumulative  {name}")
    print(f"  {len(extra)} modules beyond the floor's, {sum(row[0] for row in extra) / 1e3:.1f} ms self time in all")
    print("\nStratus cold start, biggest cumulative times (us)")
    for own, cumulative, name in sorted(rows, key=lambda row: row[1], reverse=True)[:20]:
        print(f"  {own:>7} self {cumulative:>8} cumulative  {name}")
    print("\nStratus warm tools/call, cProfile of 5000 calls")
    print(measure.profile(python, "stratus", 5000, env))


@dataclass(frozen=True)
class Sizes:
    """How much each part measures: a full run, --quick or --smoke."""

    runs: int
    calls: int
    repeats: int
    callgrind: bool
    smoke: bool
    quick: bool

    @property
    def stream_runs(self) -> int:
        return 1 if self.smoke else 3 if self.quick else 15

    @property
    def wrk_seconds(self) -> float:
        return 1 if self.smoke else 2 if self.quick else 5

    @property
    def share_runs(self) -> int:
        return 1 if self.smoke else 2 if self.quick else 7

    @property
    def profile_batches(self) -> int:
        return 1 if self.smoke else 10 if self.quick else 40


def built_package(pythons: Pythons) -> dict[str, dict[str, str]]:
    """Build the package `sam build` produces and add it as the subject `stratus-built` (run on the runtime's
    Python, CPython 3.13); its environment overrides, or none where pyenv has no 3.13."""
    runtime = benchenv.interpreter("3.13")
    if runtime is None:
        _log("  no CPython 3.13 (the Lambda runtime's) in pyenv: the built package is not measured")
        return {}
    started = time.perf_counter()
    package = artifact.build(benchenv.cache_dir() / "bench-artifact", runtime)
    _log(f"built the Lambda package with the Makefile's sam build recipe ({time.perf_counter() - started:.0f} s)")
    pythons[streaming.BUILT] = runtime
    return {streaming.BUILT: artifact.environment(package)}


def measure_parts(
    results: figures.Results,
    parts: Sequence[str],
    pythons: Pythons,
    env: dict[str, str],
    sizes: Sizes,
    built: dict[str, dict[str, str]],
) -> None:
    """The streaming shape, the CPU-share mode and the warm path per Python, into `results`."""
    streamed = {subject: _python(pythons, subject) for subject in (*streaming.STREAMING_SUBJECTS, *built)}
    if "streaming" in parts:
        _log(f"streaming shape: {sizes.stream_runs} cold starts per subject, then warm calls and wrk")
        results.streaming = streaming.run(
            streamed,
            env,
            overrides=built,
            runs=sizes.stream_runs,
            calls=sizes.calls,
            seconds=sizes.wrk_seconds,
            wrk=throughput.wrk(),
            log=_log,
        )
    if "cpu-share" in parts:
        buffered = (*(SMOKE_SHARE_SUBJECTS if sizes.smoke else SUBJECTS), *built)
        streams = (*(SMOKE_SHARE_SUBJECTS if sizes.smoke else streaming.STREAMING_SUBJECTS), *built)
        _log(f"CPU share (cgroup v1 cpu quota): {sizes.share_runs} cold starts per subject at each memory size")
        results.shares = cpushare.run(
            {subject: _python(pythons, subject) for subject in buffered},
            env,
            overrides=built,
            runs=sizes.share_runs,
            buffered=buffered,
            streamed=streams,
            log=_log,
        )
    if "pythons" in parts:
        counted = "timed and counted (callgrind)" if sizes.callgrind else "timed"
        _log(f"warm session path per Python, {counted}")
        results.per_python = per_python.run(
            pythons["stratus"], env, calls=sizes.calls, repeats=sizes.repeats, callgrind=sizes.callgrind, log=_log
        )
        results.profile = per_python.profile(pythons["stratus"], env, batches=sizes.profile_batches)


def _print_part_tables(results: figures.Results) -> list[tuple[str, str]]:
    """Print the tables of the parts measured; return each one's (name, Markdown) for the docs."""
    tables = []
    for name, table_figures, columns in (
        ("streaming", figures.STREAMING_FIGURES, figures.STREAMING_COLUMNS),
        ("cpu-share", figures.share_figures(cpushare.MEMORY_SIZES_MB), SUBJECTS),
        ("pythons", figures.python_figures(list(results.per_python)), figures.PYTHON_COLUMNS),
    ):
        cells = [row.cells(columns) for row in figures.rows(table_figures, results)]
        if not cells:
            continue
        print()
        print(text_table(cells, columns))
        tables.append((name, markdown_table(cells, columns)))
    for line in report.part_notes(results):
        print(f"- {line}")
    return tables


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer runs, no callgrind, do not write the docs")
    parser.add_argument(
        "--smoke", action="store_true", help="CI-sized: every subject and measurement once, in seconds; prints only"
    )
    parser.add_argument("--runs", type=int, help="cold starts per subject (default 25, quick 5)")
    parser.add_argument("--calls", type=int, help="timed warm calls per process (default 5000, quick 1000)")
    parser.add_argument("--no-callgrind", action="store_true", help="skip the instruction counts")
    parser.add_argument("--no-write", action="store_true", help=f"do not rewrite {DOCS.relative_to(measure.REPO)}")
    parser.add_argument("--profile", action="store_true", help="print Stratus's cold and warm hot spots and exit")
    parser.add_argument(
        "--profile-warm",
        action="store_true",
        help="print where a warm tools/call in a session goes (module groups; C functions with valgrind) and exit",
    )
    parser.add_argument("--python", default="3.13", help="the CPython of --profile-warm (default 3.13)")
    parser.add_argument("--only", choices=PARTS, help="measure one part alone and print its table (never writes)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.quick = True
    sizes = Sizes(
        runs=args.runs or (1 if args.smoke else 5 if args.quick else 25),
        calls=args.calls or (200 if args.smoke else 1000 if args.quick else 5000),
        repeats=1 if args.smoke else 3,
        callgrind=not (args.quick or args.no_callgrind) and measure.valgrind() is not None,
        smoke=args.smoke,
        quick=args.quick,
    )
    runs, calls, repeats = sizes.runs, sizes.calls, sizes.repeats
    started = time.perf_counter()

    python = benchenv.ensure_venv()
    pythons: Pythons = {
        "stratus": python,
        "floor": python,
        "awslabs": python,
        **{name: benchenv.ensure_anchor_venv(name) for name in benchenv.ANCHOR_PACKAGES},
    }
    env = measure.child_env()
    built = {} if args.profile or args.profile_warm else built_package(pythons)
    if args.profile:
        hot_spots(python, env)
        return
    if args.profile_warm:
        target = benchenv.ensure_python_venv(args.python, python)
        if target is None:
            raise SystemExit(f"pyenv has no Python {args.python}")
        counted = measure.valgrind() is not None and not args.no_callgrind
        per_python.print_profile(target, env, batches=sizes.profile_batches, callgrind=counted)
        return
    if args.only:
        alone = figures.Results.alone()
        measure_parts(alone, [args.only], pythons, env, sizes, built)
        _print_part_tables(alone)
        print(f"\n({time.perf_counter() - started:.0f} s)")
        return
    try:
        _log(f"cold starts: {runs} per subject")
        with backends.backend_envs() as backend_env:
            cold, bare_cpu = run_cold(pythons, runs, env, {**backend_env, **built})
        ir = None
        if sizes.callgrind:
            _log("instruction counts (callgrind)")
            ir = run_callgrind(pythons, env, built)
        _log(f"warm calls: {calls} x {repeats} processes per subject")
        warm = run_warm(pythons, calls, repeats, env, SMOKE_SLOW_CALLS if args.smoke else None)
        _log("pipeline overhead")
        pipeline = run_pipeline(python, calls * 4, repeats, env)
        _log("stores")
        stores = measure.stores(calls)
        _log("notifications across processes")
        notify = measure.notify(20 if args.smoke else 100 if args.quick else 300)
        _log("gateway overhead")
        gateway = measure.gateway(20 if args.smoke else 200 if args.quick else 1000)
        _log("ASGI in-process")
        in_process = {
            subject: measure.asgi(_python(pythons, subject), subject, calls, env)
            for subject in ("stratus", "stratus-legacy", "floor", "sdk", "fastmcp")
        }
        served = run_throughput(pythons, env, seconds=1 if args.smoke else 3 if args.quick else 10)
        _log("scaling: sessions (Redis) and tools")
        session_levels = (
            [10, 100] if args.smoke else [10, 1000, 10_000] if args.quick else [10, 100, 1000, 10_000, 100_000]
        )
        sessions = measure.scale_sessions(calls, session_levels)
        tool_levels = [1, 10] if args.smoke else [1, 100] if args.quick else [1, 10, 100, 1000]
        tools = [measure.scale_tools(python, count, calls, env) for count in tool_levels]
        results = figures.Results(
            cold, bare_cpu, ir, warm, pipeline, stores, notify, served, in_process, gateway, sessions, tools
        )
        measure_parts(results, PARTS, pythons, env, sizes, built)
    except RuntimeError:
        if not python.exists():
            raise SystemExit(
                f"the bench venv vanished during the run ({python}): something removed the cache"
            ) from None
        raise

    rows = figures.rows(figures.FIGURES, results)
    notes = report.notes(results) + report.scaling_notes(sessions, tools)
    if measure.valgrind() is None and not args.quick and not args.no_callgrind:
        notes.append("instruction counts skipped: valgrind is not installed")
    machine = machine_note(pythons)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cells = [row.cells() for row in rows]
    print()
    print(text_table(cells))
    print()
    for line in [*notes, *machine]:
        print(f"- {line}")
    part_tables = _print_part_tables(results)
    elapsed = time.perf_counter() - started
    print(f"\n({elapsed:.0f} s)")
    if not (args.quick or args.no_write):
        command = "make bench" if argv is None and len(sys.argv) == 1 else "bench/run.py " + " ".join(sys.argv[1:])
        if os.environ.get("XDG_CACHE_HOME"):
            command = f"XDG_CACHE_HOME={os.environ['XDG_CACHE_HOME']} {command}"
        chart_data = {
            "cold": {subject: _median([run["cpu_ms"] for run in cold[subject]]) for subject in SUBJECTS},
            "warm": {subject: warm[subject]["median_us"] for subject in SUBJECTS},
            "throughput": {subject: rate["requests_per_s"] for subject, rate in served.items()},
            "sessions": sessions,
            "tools": tools,
            **report.part_charts(results),
        }
        measure.charts(python, chart_data, DOCS.parent)
        DOCS.parent.mkdir(parents=True, exist_ok=True)
        main_table = markdown_table(cells)
        parts = report.part_sections(results, dict(part_tables), command)
        kept = report.kept_sections(DOCS.read_text() if DOCS.exists() else "")
        DOCS.write_text(report.page(command, when, machine, main_table, notes, runs, calls, [*parts, *kept]))
        _log(f"wrote {DOCS.relative_to(measure.REPO)} and its charts")


if __name__ == "__main__":
    main()
