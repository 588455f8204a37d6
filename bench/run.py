"""Cold start and warm latency of Stratus's buffered Lambda handler, beside the floor and the awslabs anchor.

    make bench                                # full run (a few minutes), rewrites docs/benchmarks.md
    .venv/bin/python bench/run.py --quick     # fewer runs, no callgrind, prints only
    .venv/bin/python bench/run.py --smoke     # every subject and measurement once, in seconds (CI: make test)
    .venv/bin/python bench/run.py --profile   # hot spots: -X importtime of the cold start, cProfile of warm calls

Subjects, all run by the same interpreter (see benchenv.py for their venvs):
  stratus  `examples/add.py`'s module-level `handler` (in-memory store, default settings)
  floor    bare Mangum + Starlette + pydantic with one route (bench/floor_app.py): what our stack costs at least
  awslabs  the same one-tool server on `awslabs-mcp-lambda-handler` (bench/awslabs_app.py)
  sdk      the same on the official MCP Python SDK 2.x under Mangum (bench/sdk_app.py)
  fastmcp  the same on FastMCP under Mangum (bench/fastmcp_app.py)
  rmsl     the same on run-mcp-servers-with-aws-lambda: a stdio server started per request (bench/rmsl_app.py)
Every subject answers the same API Gateway HTTP API v2 tools/call event (bench/wire.py). This is a benchmark,
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
from pathlib import Path
from typing import Any

import backends
import benchenv
import measure
import throughput
from report import LABELS, SUBJECTS, Row, markdown_table, text_table, verdict

DOCS = measure.REPO / "docs" / "benchmarks.md"
COLD_FLOOR_TARGET = 1.15
COLD_AWSLABS_TARGET = 1.0
COLD_SDK_TARGET = 0.3
RSS_TARGET_MIB = 40.0
WARM_SDK_TARGET = 0.1
THROUGHPUT_SDK_TARGET = 2.0
SESSION_LEVELS = [10, 100, 1000, 10_000, 100_000]
WARM_TARGET_US = 100.0
PIPELINE_TARGET_US = 15.0
LIMITED_PIPELINE_TARGET_US = 40.0
SESSION_BYTES_TARGET = 1024
NOTIFY_TARGET_MS = 5.0
GATEWAY_OVERHEAD_TARGET_MS = 1.0
FORBIDDEN = ("boto3", "botocore", "redis", "aws_lambda_powertools.tracing", "aws_xray_sdk")
WARM_SUBJECTS = ("stratus", "stratus-legacy", "floor", "awslabs", "sdk", "fastmcp", "rmsl")
SLOW_SUBJECTS = {"rmsl": 20}
"""Subjects that start a process per request get this many warm calls per process (and a tenth as warm-up)."""
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


def run_callgrind(pythons: Pythons, env: dict[str, str]) -> dict[str, int] | None:
    """Instructions per cold-start child, and for the subjects the span alone (child minus the bare harness)."""
    if measure.valgrind() is None:
        _log("  valgrind not found: instruction counts skipped")
        return None
    totals = {}
    for subject in ("bare", *(subject for subject in SUBJECTS if subject not in UNTRACEABLE)):
        started = time.perf_counter()
        totals[subject] = measure.instructions(_python(pythons, subject), subject, env)
        _log(f"  callgrind {subject}: {totals[subject]:,} instructions ({time.perf_counter() - started:.0f} s)")
    return totals


def run_warm(pythons: Pythons, calls: int, repeats: int, env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Warm latency per subject: `repeats` fresh processes each (interleaved), samples pooled."""
    pooled: dict[str, list[float]] = {subject: [] for subject in WARM_SUBJECTS}
    cpu: dict[str, list[float]] = {subject: [] for subject in WARM_SUBJECTS}
    kinds: dict[str, dict[str, list[float]]] = {subject: {} for subject in WARM_SUBJECTS}
    for repeat in range(repeats):
        for subject in WARM_SUBJECTS:
            count = min(calls, SLOW_SUBJECTS.get(subject, calls))
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


def _backend_rows(cold: dict[str, list[dict[str, Any]]], cold_cpu: dict[str, float | None]) -> list[Row]:
    """Stratus's cold start on each shared store, beside the anchors' (on their own, store-less set-ups)."""
    rows = []
    for subject, store in (("stratus-redis", "Redis"), ("stratus-dynamodb", "DynamoDB")):
        if subject not in cold:
            continue
        cpu = _median([run["cpu_ms"] for run in cold[subject]])
        checked = store == "Redis"  # the target covers the memory and Redis stores
        rows.append(
            Row(
                f"cold: import+build+1st call on {store}, CPU ms",
                {**cold_cpu, "stratus": cpu},
                target=f"<= {COLD_FLOOR_TARGET:.2f}x floor" if checked else "",
                verdict=verdict(cpu <= COLD_FLOOR_TARGET * (cold_cpu["floor"] or 0.0)) if checked else "",
            )
        )
    return rows


def build_rows(
    cold: dict[str, list[dict[str, Any]]],
    bare_cpu: list[float],
    ir: dict[str, int] | None,
    warm: dict[str, dict[str, Any]],
    pipeline: dict[str, float],
    stores: dict[str, Any],
    notify: dict[str, float],
    served: dict[str, dict[str, float]],
    in_process: dict[str, dict[str, float]],
    gateway: dict[str, float],
) -> tuple[list[Row], list[str]]:
    """The table's rows, and the notes under it."""

    def each(key: str, scale: float = 1.0) -> dict[str, float | None]:
        return {subject: _median([run[key] for run in cold[subject]]) * scale for subject in SUBJECTS}

    cold_cpu = each("cpu_ms")
    to_floor = (cold_cpu["stratus"] or 0.0) / (cold_cpu["floor"] or 1.0)
    to_awslabs = (cold_cpu["stratus"] or 0.0) / (cold_cpu["awslabs"] or 1.0)
    to_sdk = (cold_cpu["stratus"] or 0.0) / (cold_cpu["sdk"] or 1.0)
    rss = each("max_rss_kib", 1 / 1024)
    forbidden = {
        subject: sorted({name for run in cold[subject] for name in run["watched"] if name in FORBIDDEN})
        for subject in SUBJECTS
    }
    warm_median = {subject: warm[subject]["median_us"] for subject in SUBJECTS}
    rows = [
        Row(
            "cold: import+build+1st call, CPU ms",
            cold_cpu,
            target=f"<= {COLD_FLOOR_TARGET:.2f}x floor, <= {COLD_AWSLABS_TARGET:.2f}x awslabs, "
            f"<= {COLD_SDK_TARGET:.2f}x SDK",
            verdict=f"{verdict(to_floor <= COLD_FLOOR_TARGET)} / {verdict(to_awslabs <= COLD_AWSLABS_TARGET)} / "
            f"{verdict(to_sdk <= COLD_SDK_TARGET)}",
        ),
        *_backend_rows(cold, cold_cpu),
        Row("cold: import+build+1st call, CPU ms, best run", {s: min(r["cpu_ms"] for r in cold[s]) for s in SUBJECTS}),
        Row("cold: import+build+1st call, wall ms", each("wall_ms")),
        Row("cold: whole process, CPU ms", each("process_cpu_ms")),
        Row("cold: whole process, wall ms", each("process_wall_ms")),
        Row(
            "cold: peak RSS, MiB",
            rss,
            target=f"<= {RSS_TARGET_MIB:.0f} MiB",
            verdict=verdict((rss["stratus"] or 0.0) <= RSS_TARGET_MIB),
        ),
        Row("cold: modules imported by the span", each("modules_added"), digits=0),
    ]
    if ir is not None:
        span = {subject: float(ir[subject] - ir["bare"]) / 1e6 for subject in SUBJECTS if subject in ir}
        whole = {subject: float(ir[subject]) / 1e6 for subject in SUBJECTS if subject in ir}
        ir_floor = (span["stratus"] or 0.0) / (span["floor"] or 1.0)
        ir_awslabs = (span["stratus"] or 0.0) / (span["awslabs"] or 1.0)
        ir_sdk = (span["stratus"] or 0.0) / (span["sdk"] or 1.0)
        rows += [
            Row(
                "cold: import+build+1st call, M instructions",
                span,
                target="same targets (cross-check)",
                verdict=f"{verdict(ir_floor <= COLD_FLOOR_TARGET)} / {verdict(ir_awslabs <= COLD_AWSLABS_TARGET)} / "
                f"{verdict(ir_sdk <= COLD_SDK_TARGET)}",
            ),
            Row("cold: whole process, M instructions", whole),
        ]
    rows += [
        Row(
            "cold: boto3/botocore/redis/Tracer imported",
            {subject: ", ".join(forbidden[subject]) or "none" for subject in SUBJECTS},
            ratios=False,
            target="none (memory store)",
            verdict=verdict(not forbidden["stratus"]),
        ),
        Row(
            "warm: tools/call median, us",
            warm_median,
            target=f"<= {WARM_TARGET_US:.0f} us, <= {WARM_SDK_TARGET:.2f}x SDK",
            verdict=f"{verdict(warm['stratus']['median_us'] <= WARM_TARGET_US)} / "
            f"{verdict(warm['stratus']['median_us'] <= WARM_SDK_TARGET * warm['sdk']['median_us'])}",
        ),
        Row("warm: tools/call p99, us", {subject: warm[subject]["p99_us"] for subject in SUBJECTS}),
        *[
            Row(
                f"warm: {kind} median, us",
                {subject: warm[subject]["kinds_us"].get(kind) for subject in SUBJECTS},
            )
            for kind in ("discover or initialize", "tools/list")
        ],
        Row("warm: CPU per call, us", {subject: warm[subject]["cpu_per_call_us"] for subject in SUBJECTS}),
    ]
    rows.append(
        Row(
            "ASGI in-process: tools/call median, us",
            {subject: in_process[subject]["median_us"] for subject in SUBJECTS if subject in in_process},
        )
    )
    if served:
        rate = {subject: figures["requests_per_s"] for subject, figures in served.items()}
        to_sdk_rate = rate["stratus"] / (rate["sdk"] or 1.0)
        rows += [
            Row(
                "uvicorn: tools/call throughput, req/s",
                rate,
                digits=0,
                target=f">= {THROUGHPUT_SDK_TARGET:.1f}x SDK",
                verdict=verdict(to_sdk_rate >= THROUGHPUT_SDK_TARGET),
            ),
            Row(
                "uvicorn: server CPU per request, us",
                {subject: figures["cpu_per_request_us"] for subject, figures in served.items()},
            ),
        ]
    added = pipeline["pipeline_us"] - pipeline["direct_us"]
    added_limited = pipeline["limited_us"] - pipeline["direct_us"]
    rows += [
        Row(
            "pipeline: added to a warm tools/call, us",
            {"stratus": added},
            ratios=False,
            target=f"<= {PIPELINE_TARGET_US:.0f} us",
            verdict=verdict(added <= PIPELINE_TARGET_US),
        ),
        Row(
            "pipeline + rate limit + breaker (memory), added, us",
            {"stratus": added_limited},
            ratios=False,
            target=f"<= {LIMITED_PIPELINE_TARGET_US:.0f} us",
            verdict=verdict(added_limited <= LIMITED_PIPELINE_TARGET_US),
        ),
    ]
    redis_trips = stores["redis"]["round_trips"]["legacy tools/call"]
    dynamo_trips = stores["dynamodb (moto)"]["round_trips"]["legacy tools/call"]
    session_bytes = stores["redis"]["memory_per_session_bytes"]
    rows += [
        Row(
            "stores: Redis round trips, legacy tools/call",
            {"stratus": float(redis_trips)},
            digits=0,
            ratios=False,
            target="= 1 (session + limit + breaker)",
            verdict=verdict(redis_trips == 1),
        ),
        Row(
            "stores: DynamoDB requests, legacy tools/call",
            {"stratus": float(dynamo_trips)},
            digits=0,
            ratios=False,
            target="<= 2",
            verdict=verdict(dynamo_trips <= 2),
        ),
        Row(
            "stores: Redis memory per idle session, bytes",
            {"stratus": session_bytes},
            digits=0,
            ratios=False,
            target=f"<= {SESSION_BYTES_TARGET}",
            verdict=verdict(session_bytes <= SESSION_BYTES_TARGET),
        ),
        Row(
            "notify -> GET stream on another process (Redis), median ms",
            {"stratus": notify["median_ms"]},
            digits=2,
            ratios=False,
            target=f"<= {NOTIFY_TARGET_MS:.0f}",
            verdict=verdict(notify["median_ms"] <= NOTIFY_TARGET_MS),
        ),
        Row(
            f"idle open GET stream: Redis commands in {notify['idle_seconds']:.0f} s",
            {"stratus": float(notify["idle_commands"])},
            digits=0,
            ratios=False,
            target="= 0 (none between heartbeats)",
            verdict=verdict(notify["idle_commands"] == 0),
        ),
        Row(
            "gateway: median ms added to a warm tools/call (loopback)",
            {"stratus": gateway["overhead_median_ms"]},
            digits=3,
            ratios=False,
            target=f"<= {GATEWAY_OVERHEAD_TARGET_MS:.0f}",
            verdict=verdict(gateway["overhead_median_ms"] <= GATEWAY_OVERHEAD_TARGET_MS),
        ),
        Row(
            "gateway: cached tools/list with the upstream stopped, median ms",
            {"stratus": gateway["list_cached_median_ms"]},
            digits=3,
            ratios=False,
            target="answered from the cache",
            verdict=verdict(gateway["list_cached_without_upstream"] == 1.0),
        ),
    ]
    watched = {
        subject: sorted({name for run in cold[subject] for name in run["watched"]}) or ["none"]
        for subject in (*SUBJECTS, *backends.BACKEND_SUBJECTS)
        if subject in cold
    }
    legacy = warm["stratus-legacy"]
    notes = [
        f"reference: `python -c pass` whole process {_median(bare_cpu):.1f} ms CPU; "
        f"bare harness span {_median([run['cpu_ms'] for run in cold['bare']]):.2f} ms CPU",
        "cold CPU ms spread (min-max): "
        + "; ".join(f"{subject} {_spread([run['cpu_ms'] for run in cold[subject]])}" for subject in SUBJECTS),
        "modules of note: " + "; ".join(f"{subject}: {', '.join(names)}" for subject, names in watched.items()),
        f"Stratus legacy (2025-11-25, in a session, memory store) warm tools/call: "
        f"median {legacy['median_us']:.1f} us, p99 {legacy['p99_us']:.1f} us; through the ASGI app in-process "
        f"median {in_process['stratus-legacy']['median_us']:.1f} us (2026-07-28: "
        f"{in_process['stratus']['median_us']:.1f} us)",
        "stores (bench/stores.py; legacy tools/call with session + rate limit + breaker through the Lambda handler): "
        + "; ".join(
            f"{name} median {figures['median_us']:.0f} us, p99 {figures['p99_us']:.0f} us"
            for name, figures in stores.items()
        )
        + " (moto answers in-process: its figure says nothing of DynamoDB's own latency)",
        "store round trips per request kind: "
        + "; ".join(
            f"{name}: " + ", ".join(f"{kind} {count}" for kind, count in figures["round_trips"].items())
            for name, figures in stores.items()
        ),
        "store latency per request kind, median us: "
        + "; ".join(
            f"{name}: " + ", ".join(f"{kind} {median:.0f}" for kind, median in figures["latency_by_kind_us"].items())
            for name, figures in stores.items()
        ),
        f"notifications (bench/notify.py, {notify['events']:.0f} events): median {notify['median_ms']:.2f} ms, p90 "
        f"{notify['p90_ms']:.2f} ms = {notify['median_ms'] / notify['redis_ping_ms']:.1f}x a Redis PING "
        f"({notify['redis_ping_ms']:.3f} ms) in the same run; Redis commands over the quiet window with no stream "
        f"open: {notify['quiet_commands']:.0f}",
        f"gateway (bench/gateway.py, {gateway['calls']:.0f} calls, 2026-07-28): tools/call median "
        f"{gateway['direct_median_ms']:.3f} ms to the upstream, {gateway['gateway_median_ms']:.3f} ms through the "
        f"gateway ({gateway['gateway_median_ms'] / gateway['direct_median_ms']:.2f}x); tools/list median "
        f"{gateway['list_direct_median_ms']:.3f} ms to the upstream, {gateway['list_cached_median_ms']:.3f} ms from "
        "the gateway's cache with the upstream stopped",
        f"pipeline (bench/pipeline.py, in-process medians): tool alone {pipeline['direct_us']:.1f} us, through the "
        f"pipeline {pipeline['pipeline_us']:.1f} us, with a rate limit and a breaker {pipeline['limited_us']:.1f} us",
    ]
    return rows, notes + findings(warm, in_process, served, stores)


def findings(
    warm: dict[str, dict[str, Any]],
    in_process: dict[str, dict[str, float]],
    served: dict[str, dict[str, float]],
    stores: dict[str, Any],
) -> list[str]:
    """What costs the time where a target is missed: the gaps, measured in this same run."""
    found = []
    stratus_warm, sdk_warm = warm["stratus"]["median_us"], warm["sdk"]["median_us"]
    if stratus_warm > WARM_SDK_TARGET * sdk_warm:
        mangum = warm["floor"]["median_us"] - in_process["floor"]["median_us"]
        found.append(
            f"finding: the warm Lambda tools/call is {stratus_warm / sdk_warm:.2f}x the SDK's, not "
            f"{WARM_SDK_TARGET:.2f}x ({stratus_warm - WARM_SDK_TARGET * sdk_warm:.0f} us too slow). Mangum alone "
            f"costs about {mangum:.0f} us per invocation (the floor through Mangum "
            f"{warm['floor']['median_us']:.0f} us, its app awaited directly {in_process['floor']['median_us']:.0f} "
            f"us), {mangum / stratus_warm:.0%} of Stratus's {stratus_warm:.0f} us; meeting the target would take an "
            "API Gateway event adapter of our own in place of Mangum"
        )
    rate_to_sdk = served["stratus"]["requests_per_s"] / served["sdk"]["requests_per_s"] if served else 0.0
    if served and rate_to_sdk < THROUGHPUT_SDK_TARGET:
        uvicorn = served["floor"]["cpu_per_request_us"] - in_process["floor"]["median_us"]
        own = in_process["stratus"]["median_us"] - in_process["floor"]["median_us"]
        found.append(
            f"finding: under uvicorn Stratus serves {rate_to_sdk:.3f}x "
            f"the SDK's requests per second, short of {THROUGHPUT_SDK_TARGET:.1f}x. uvicorn and h11 cost about "
            f"{uvicorn:.0f} us of CPU per request whatever the app (the floor's CPU per request less its app's "
            f"time); Stratus's app costs {own:.0f} us more than the floor's: a request accepting SSE runs through "
            "the relay that can stream (a task for the call and an asyncio.wait), and a 2026-07-28 request adds a "
            "task watching for the client leaving, which cancels the call"
        )
    session_bytes = stores["redis"]["memory_per_session_bytes"]
    if session_bytes > SESSION_BYTES_TARGET:
        found.append(
            f"finding: an idle session costs {session_bytes:.0f} bytes of Redis memory, "
            f"{session_bytes - SESSION_BYTES_TARGET:.0f} over the target. The roster's two sorted-set entries per "
            "session (expiry and creation, about 300 bytes) are the difference: they keep the global session "
            "limit exact across containers and make the /health census O(log n)"
        )
    return found


def scaling_notes(sessions: list[dict[str, float]], tools: list[dict[str, float]]) -> list[str]:
    def series(rows: list[dict[str, float]], key: str, digits: int = 0) -> str:
        return " / ".join(f"{row[key]:,.{digits}f}" for row in rows)

    levels = " / ".join(f"{row['sessions']:,.0f}" for row in sessions)
    counts = " / ".join(f"{row['tools']:,.0f}" for row in tools)
    return [
        f"sessions (bench/scale_sessions.py, Redis) at {levels} live: legacy tools/call median "
        f"{series(sessions, 'call_median_us')} us, p99 {series(sessions, 'call_p99_us')} us; `/health` census "
        f"{series(sessions, 'census_us')} us; Redis memory per session {series(sessions, 'memory_per_session_bytes')} "
        "bytes (the first levels carry the fixed overhead)",
        f"tools (bench/scale_tools.py) at {counts} registered: cold start CPU {series(tools, 'cold_cpu_ms', 1)} ms; "
        f"peak RSS {series(tools, 'max_rss_mib', 1)} MiB; tools/call median {series(tools, 'call_median_us')} us; "
        f"tools/list (first page, {tools[-1]['first_page']:.0f} tools at most) median "
        f"{series(tools, 'list_median_us')} us",
    ]


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


def write_docs(
    command: str, when: str, machine: list[str], table: str, notes: list[str], runs: int, calls: int
) -> None:
    lines = [
        "# Benchmarks",
        "",
        f"Written by `{command}` (bench/run.py) on {when}. Rerun it to refresh this page; the figures are from",
        "one machine and one run, so compare ratios rather than absolute numbers across machines.",
        "",
        "Machine:",
        "",
        *[f"- {line}" for line in machine],
        "",
        "## Results",
        "",
        table,
        "",
        *[f"- {note}" for note in notes],
        "",
        "![cold start](benchmarks-cold.png)",
        "![warm latency](benchmarks-warm.png)",
        "![throughput](benchmarks-throughput.png)",
        "![scaling](benchmarks-scaling.png)",
        "",
        "## Subjects",
        "",
        "- **Stratus**: `examples/add.py`, a one-tool `add(a, b)` `McpServer` and its module-level buffered Lambda",
        "  `handler` (Mangum, in-memory store, default settings).",
        "- **floor**: bench/floor_app.py, a bare Mangum + Starlette + pydantic app with one POST route that parses",
        "  the JSON-RPC body with a pydantic model and returns JSON: the least our own stack can cost.",
        "- **awslabs**: bench/awslabs_app.py, the same tool on `awslabs-mcp-lambda-handler` (no session store).",
        "- **SDK**: bench/sdk_app.py, the same tool on the official MCP Python SDK 2.x (`MCPServer`), its",
        "  Streamable HTTP app in stateless JSON mode under Mangum. The best working Mangum set-up: the SDK's",
        "  session manager may start only once, so its lifespan is started at import on the loop Mangum reuses",
        '  (bench/lifespan_once.py) and Mangum runs with `lifespan="off"`; its per-request INFO logs are off.',
        "- **FastMCP**: bench/fastmcp_app.py, the same on FastMCP's `http_app(stateless_http=True,",
        "  json_response=True)`, set up the same way.",
        "- **run-mcp-servers** (`run-mcp-servers-with-aws-lambda`): bench/rmsl_app.py, its API Gateway v2 handler",
        "  in front of the same tool as a stdio server (bench/rmsl_server.py, SDK 1.x), which the package starts,",
        "  initializes and stops for every request. Its *span* CPU figures leave that server process out; the",
        "  whole-process CPU (from `wait4`, which counts waited-for descendants) and the wall times include it.",
        "  Being one process per request, it gets 20 warm calls per process and no callgrind run.",
        "",
        "Stratus, the floor and awslabs run under one interpreter and package set, in the bench venv",
        "`${XDG_CACHE_HOME:-~/.cache}/stratus/bench-venv`; the other anchors, whose dependency trees differ, in",
        "`bench-anchor-sdk`, `bench-anchor-fastmcp` and `bench-anchor-rmsl` beside it, on the same interpreter,",
        "Mangum and uvicorn (all created on first use; `.venv` is never touched). Stratus is imported from the",
        "working tree via `PYTHONPATH`. Each",
        "answers the same API Gateway HTTP API v2 event: a 2026-07-28 `tools/call` of `add(1, 2)` to POST /mcp",
        "with the mirrored `Mcp-*` headers.",
        "",
        "## Method",
        "",
        f"- **Cold**: {runs} fresh processes per subject, interleaved in rotating order, after one untimed run",
        "  each that writes the `.pyc` files. The child (bench/cold.py) loads only `sys`, `time` and the event",
        "  before starting its clocks, then imports the subject's handler module (which builds the app) and answers",
        "  one tools/call. *import+build+1st call* is `time.process_time()` / `perf_counter()` across that span;",
        "  *whole process* adds interpreter start-up and exit, from the parent's `os.wait4` rusage. Peak RSS is",
        "  the child's own `VmHWM` (since exec; `wait4`'s maxrss would start from the parent's size). Medians.",
        "- **Instructions**: one run of each child under `valgrind --tool=callgrind`; the span is the child's total",
        "  minus that of the same harness importing nothing. Deterministic, so it is the cross-check for the",
        "  noisy CPU times.",
        f"- **Warm**: in-process, {calls} timed calls per process after a warm-up, three processes per subject,",
        "  samples pooled; median and p99 of `perf_counter_ns` around each handler call. Each process also times",
        "  a quarter as many handshakes (2026-07-28 `server/discover` where the subject speaks that revision, else",
        "  `initialize`) and tools/list calls (the floor answers only tools/call).",
        "- **ASGI in-process**: each ASGI app (bench/asgi_apps.py) awaited directly with the HTTP scope of the",
        "  same request, no server or adapter (bench/asgi_warm.py); Stratus in both eras.",
        "- **Throughput**: each subject's ASGI app (bench/asgi_apps.py) under uvicorn, one worker, the same",
        "  uvicorn and h11 everywhere; `wrk -t1 -c16` (Debian's wrk) sends the same tools/call for 10 s after a 1 s",
        "  warm-up; req/s from wrk, the server's CPU per request from /proc/<pid>/stat. awslabs has no ASGI app.",
        "- Targets (issue): cold CPU <= 1.15x the floor, <= 1.0x awslabs and <= 0.3x the SDK; RSS after the",
        "  cold start <= 40 MiB; no boto3, Powertools Tracer or Redis client imported unless configured; warm",
        "  tools/call median <= 100 us and <= 0.1x the SDK's, on the in-memory store; uvicorn throughput >= 2x the",
        "  SDK's.",
        "",
    ]
    DOCS.parent.mkdir(parents=True, exist_ok=True)
    DOCS.write_text("\n".join(lines))


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
    args = parser.parse_args(argv)
    if args.smoke:
        args.quick = True
    runs = args.runs or (1 if args.smoke else 5 if args.quick else 25)
    calls = args.calls or (200 if args.smoke else 1000 if args.quick else 5000)
    repeats = 1 if args.smoke else 3
    started = time.perf_counter()

    python = benchenv.ensure_venv()
    pythons: Pythons = {
        "stratus": python,
        "floor": python,
        "awslabs": python,
        **{name: benchenv.ensure_anchor_venv(name) for name in benchenv.ANCHOR_PACKAGES},
    }
    env = measure.child_env()
    if args.profile:
        hot_spots(python, env)
        return
    try:
        _log(f"cold starts: {runs} per subject")
        with backends.backend_envs() as backend_env:
            cold, bare_cpu = run_cold(pythons, runs, env, backend_env)
        ir = None
        if not (args.quick or args.no_callgrind):
            _log("instruction counts (callgrind)")
            ir = run_callgrind(pythons, env)
        _log(f"warm calls: {calls} x {repeats} processes per subject")
        warm = run_warm(pythons, calls, repeats, env)
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
    except RuntimeError:
        if not python.exists():
            raise SystemExit(
                f"the bench venv vanished during the run ({python}): something removed the cache"
            ) from None
        raise

    rows, notes = build_rows(cold, bare_cpu, ir, warm, pipeline, stores, notify, served, in_process, gateway)
    notes += scaling_notes(sessions, tools)
    if ir is None and not args.quick and not args.no_callgrind:
        notes.append("instruction counts skipped: valgrind is not installed")
    machine = machine_note(pythons)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cells = [row.cells() for row in rows]
    print()
    print(text_table(cells))
    print()
    for line in [*notes, *machine]:
        print(f"- {line}")
    elapsed = time.perf_counter() - started
    print(f"\n({elapsed:.0f} s)")
    if not (args.quick or args.no_write):
        command = "make bench" if argv is None and len(sys.argv) == 1 else "bench/run.py " + " ".join(sys.argv[1:])
        if os.environ.get("XDG_CACHE_HOME"):
            command = f"XDG_CACHE_HOME={os.environ['XDG_CACHE_HOME']} {command}"
        chart_data = {
            "cold": {subject: _median([run["cpu_ms"] for run in cold[subject]]) for subject in SUBJECTS},
            "warm": {subject: warm[subject]["median_us"] for subject in SUBJECTS},
            "throughput": {subject: figures["requests_per_s"] for subject, figures in served.items()},
            "sessions": sessions,
            "tools": tools,
        }
        measure.charts(python, chart_data, DOCS.parent)
        write_docs(command, when, machine, markdown_table(cells), notes, runs, calls)
        _log(f"wrote {DOCS.relative_to(measure.REPO)} and its charts")


if __name__ == "__main__":
    main()
