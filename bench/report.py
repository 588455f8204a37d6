"""The prose of the benchmark's report: the notes under the table, the findings where a target is missed, and
docs/benchmarks.md around the tables (bench/figures.py holds the figures and their targets)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import cpushare
import streaming
from backends import BACKEND_SUBJECTS
from figures import SESSION_BYTES_TARGET, THROUGHPUT_SDK_TARGET, WARM_AWSLABS_TARGET, WARM_SDK_TARGET, Results
from tables import SUBJECTS


def _spread(values: Sequence[float]) -> str:
    return f"{min(values):.1f}-{max(values):.1f}"


def notes(r: Results) -> list[str]:
    """The notes under the main table: references, spreads, and the figures that have no column of their own."""
    cold, warm, in_process, stores = r.cold, r.warm, r.in_process, r.stores
    notify, gateway, pipeline = r.notify, r.gateway, r.pipeline
    watched = {
        subject: sorted({name for run in cold[subject] for name in run["watched"]}) or ["none"]
        for subject in (*SUBJECTS, *BACKEND_SUBJECTS)
        if subject in cold
    }
    handshake = warm["stratus-legacy"]
    notes = [
        f"reference: `python -c pass` whole process {statistics.median(r.bare_cpu):.1f} ms CPU; "
        f"bare harness span {statistics.median([run['cpu_ms'] for run in cold['bare']]):.2f} ms CPU",
        "cold CPU ms spread (min-max): "
        + "; ".join(f"{subject} {_spread([run['cpu_ms'] for run in cold[subject]])}" for subject in SUBJECTS),
        "modules of note: " + "; ".join(f"{subject}: {', '.join(names)}" for subject, names in watched.items()),
        f"Stratus legacy (2025-11-25, in a session, memory store) warm tools/call: "
        f"median {handshake['median_us']:.1f} us, p99 {handshake['p99_us']:.1f} us; through the ASGI app in-process "
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
    return notes + findings(r)


def findings(r: Results) -> list[str]:
    """What costs the time where a target is missed: the gaps, measured in this same run."""
    warm, in_process, served, stores = r.warm, r.in_process, r.served, r.stores
    found = []
    stratus_warm, sdk_warm = warm["stratus"]["median_us"], warm["sdk"]["median_us"]
    if stratus_warm > WARM_SDK_TARGET * sdk_warm:
        mangum = warm["floor"]["median_us"] - in_process["floor"]["median_us"]
        found.append(
            f"finding: the warm Lambda tools/call is {stratus_warm / sdk_warm:.2f}x the SDK's, not "
            f"{WARM_SDK_TARGET:.2f}x ({stratus_warm - WARM_SDK_TARGET * sdk_warm:.0f} us too slow). Mangum alone "
            f"costs about {mangum:.0f} us per invocation (the floor through Mangum "
            f"{warm['floor']['median_us']:.0f} us, its app awaited directly {in_process['floor']['median_us']:.0f} "
            f"us), {mangum / stratus_warm:.0%} of Stratus's {stratus_warm:.0f} us, which runs its own cycle around "
            "Mangum's event handlers (handlers/invocation.py) and so pays less of it"
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
            f"{session_bytes - SESSION_BYTES_TARGET:.0f} over the target. The session's hash is the largest part "
            "(about 590 bytes by MEMORY USAGE): its `data` field is longer than hash-max-listpack-value (64), so "
            "Redis keeps the hash as a hashtable instead of a listpack; the roster's two sorted-set entries (expiry "
            "and creation) keep the session limit exact across containers and the /health census O(log n)"
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


KEPT_SECTIONS = (
    "## What an idle client bills",
    "## What a question to a person bills",
    "## How the warm path got here",
    "## Where a warm tools/call's instructions go",
    "## Telemetry at cold start",
    "## Traces on",
)
"""Sections of docs/benchmarks.md measured by hand, not by this run (their own commands are in them): a rewrite
keeps them as they are."""


def kept_sections(current: str) -> list[str]:
    """The KEPT_SECTIONS of the page as it stands, each up to the next heading, ready to go back in."""
    found = []
    for heading in KEPT_SECTIONS:
        start = current.find(f"\n{heading}\n")
        if start < 0:
            continue
        end = current.find("\n## ", start + 1)
        found.append(current[start + 1 : end + 1 if end >= 0 else len(current)])
    return found


def page(
    command: str,
    when: str,
    machine: list[str],
    table: str,
    notes: list[str],
    runs: int,
    calls: int,
    parts: Sequence[str] = (),
) -> str:
    """docs/benchmarks.md: the main table and its notes, the parts' sections (`parts`: part_sections), then what
    was measured and how."""
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
        *parts,
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
    return "\n".join(lines)


def _spreads(runs: dict[str, list[float]]) -> str:
    return "; ".join(f"{subject} {_spread(values)}" for subject, values in runs.items() if values)


def part_notes(r: Results) -> list[str]:
    """The notes under the streaming, CPU-share and per-Python tables."""
    found = []
    if r.streaming is not None:
        walls = {subject: [run["wall_ms"] for run in runs] for subject, runs in r.streaming["cold"].items()}
        found.append(f"streaming spawn -> 1st tools/call, wall ms spread (min-max): {_spreads(walls)}")
    if r.shares is not None:
        found.append(
            "CPU share: CFS periods throttled in each group: "
            + "; ".join(
                f"{memory_mb:,} MB (quota {share['quota_us']} us per {cpushare.PERIOD_US} us) "
                f"{share['throttled_periods']}"
                for memory_mb, share in r.shares.items()
            )
        )
    for version, measured in r.per_python.items():
        if all("instructions" in measured.get(subject, {}) for subject in ("stratus", "awslabs", "adapter")):
            budget = WARM_AWSLABS_TARGET * measured["awslabs"]["instructions"]
            adapter = measured["adapter"]["instructions"]
            found.append(
                f"the 1.2x goal's floor on Python {version}: {WARM_AWSLABS_TARGET}x awslabs allows "
                f"{budget / 1e3:,.0f} k instructions per call; the Lambda adapter (the event read, one eager "
                f"task or, on 3.11, one asyncio run, the answer written) around an app that does nothing takes "
                f"{adapter / 1e3:,.0f} k of them "
                f"({adapter / budget:.0%}), leaving {(budget - adapter) / 1e3:,.0f} k for everything Stratus checks "
                f"and does, where Stratus spends {(measured['stratus']['instructions'] - adapter) / 1e3:,.0f} k"
            )
    if r.profile is not None:
        top = list(r.profile["groups"].items())[:6]
        found.append(
            f"where Stratus's warm session call goes (Python {r.profile['python']}, {r.profile['samples']} samples): "
            + "; ".join(f"{name} {share:.0%}" for name, share in top)
        )
    return found


def part_charts(r: Results) -> dict[str, object]:
    """The charts.py data of the parts measured."""
    charts: dict[str, object] = {}
    if r.streaming is not None and r.cold:
        streamed = {
            subject: statistics.median(run["wall_ms"] for run in runs) for subject, runs in r.streaming["cold"].items()
        }
        buffered = {
            subject: statistics.median(run["process_wall_ms"] for run in r.cold[subject]) for subject in streamed
        }
        charts["streaming"] = {"streaming: spawn -> 1st call": streamed, "buffered: spawn -> exit": buffered}
    if r.shares:
        charts["shares"] = {
            f"{shape} at {memory_mb:,} MB": {
                subject: statistics.median(runs) for subject, runs in share[shape].items() if runs
            }
            for memory_mb, share in r.shares.items()
            for shape in ("buffered", "streaming")
        }
    if r.per_python and all("instructions" in figures for found in r.per_python.values() for figures in found.values()):
        charts["pythons"] = {
            f"Python {release}": {subject: figures["instructions"] / 1e3 for subject, figures in found.items()}
            for release, found in r.per_python.items()
        }
    return charts


def part_sections(r: Results, tables: dict[str, str], command: str) -> list[str]:
    """The docs sections of the streaming shape, the CPU-share mode, the warm path per Python and its profile."""
    lines: list[str] = []
    alone = ".venv/bin/python bench/run.py --only {} --quick"
    if "streaming" in tables:
        lines += [
            "## Streaming shape",
            "",
            f"Written by `{command}` with the rest of this page; printed alone, with fewer runs:",
            f"`{alone.format('streaming')}`.",
            "",
            "Each subject is started as the Lambda Web Adapter starts it: the entry (Stratus's `run.sh`, the others",
            f"`python -m uvicorn`), then `GET {streaming.READINESS_PATH}` every 10 ms until it answers 100-499 (the",
            "adapter's readiness check), then the first tools/call; wall and CPU (the process's own",
            "`/proc/<pid>/task/*/schedstat`) at that answer. The floor here is bare Starlette + pydantic under uvicorn",
            "(bench/starlette_floor.py), not Mangum. Warm: sequential calls on one kept-alive connection, as the",
            "adapter forwards one invocation at a time per environment; wrk likewise with one connection. Every",
            "request carries the adapter's `x-amzn-request-context`; Stratus runs with",
            "`STRATUS_TRUST_REQUEST_CONTEXT_HEADER=true`, as template.yaml sets it. The buffered rows repeat the main",
            "table's figures for the same subjects.",
            "",
            tables["streaming"],
            "",
            "![streaming cold start](benchmarks-streaming.png)",
            "",
        ]
    if "cpu-share" in tables:
        lines += [
            "## Cold start at Lambda's CPU share",
            "",
            f"Written by `{command}`; alone: `{alone.format('cpu-share')}`.",
            "",
            "Lambda gives a function CPU in proportion to its memory, one full vCPU at 1,769 MB",
            "([Lambda memory and computing power](https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html)).",
            "Each cold start runs in a cgroup v1 `cpu` group whose CFS quota gives that share: 29000 us per",
            "100000 us period (0.29 vCPU) for 512 MB, the template's `MemorySize`, and 100000 us (1 vCPU) for",
            "1,769 MB. The child joins the group between fork and exec, so the interpreter's own start is throttled",
            "too. Wall-clock medians.",
            "",
            tables["cpu-share"],
            "",
            "![cold start at Lambda's CPU share](benchmarks-shares.png)",
            "",
        ]
    elif r.shares is None:
        reason = cpushare.unavailable() or "not run"
        lines += ["## Cold start at Lambda's CPU share", "", f"Not measured in this run: {reason}.", ""]
    if "pythons" in tables:
        lines += [
            "## Warm path per Python",
            "",
            f"Written by `{command}`; alone: `{alone.format('pythons')}` (`--quick` leaves the instruction counts",
            "out).",
            "",
            "The buffered handler's tools/call add(1, 2), like for like (bench/warm_session.py): an HTTP API payload",
            "2.0 event with the headers a client and API Gateway send, parsed from JSON for every invocation, and a",
            "Lambda context for every call; in a handshake-era (2025-11-25) session loaded from memory on both sides",
            "(Stratus's memory store; awslabs written as its README writes it, its sessions in a dict). Stratus with",
            "telemetry `local`, with `emf` (the deployed default: its metrics document written per invocation), and",
            "on a 2026-07-28 call (no session). Instructions per call: two callgrind runs that parse the same events",
            "and differ only by 200 calls. Each Python has its own venv with the same package versions.",
            "",
            tables["pythons"],
            "",
        ]
        if "pythons" in part_charts(r):
            lines += ["![instructions per call per Python](benchmarks-pythons.png)", ""]
    if r.profile is not None:
        lines += _profile_section(r, command)
    return lines


def _profile_summary(groups: dict[str, float]) -> str:
    """The groups added up by owner: Mangum with the loop it runs, Stratus's own code with what it calls."""
    mangum = sum(share for name, share in groups.items() if name.endswith("(event translation, ASGI cycle)"))
    stratus = sum(share for name, share in groups.items() if "Stratus" in name)
    store = sum(share for name, share in groups.items() if name.endswith("Stratus store"))
    transport = sum(share for name, share in groups.items() if "Stratus transport" in name)
    return (
        f"In all: Mangum and the asyncio loop it runs per invocation {mangum:.0%}; Stratus's own code with the "
        f"json, asyncio and logging it calls {stratus:.0%}, of which the transport {transport:.0%} and the store "
        f"{store:.0%}."
    )


def _profile_section(r: Results, command: str) -> list[str]:
    assert r.profile is not None
    counted = r.per_python.get(r.profile["python"], {}).get("stratus", {}).get("instructions")
    header = "| group | share of the sampled time |" + (" ~k instructions per call |" if counted else "")
    lines = [
        "## Where Stratus's warm call goes",
        "",
        f"Written by `{command}` with the rest of this page; `.venv/bin/python bench/run.py --profile-warm` prints",
        "it for Stratus and awslabs, by group and by module, and Stratus's instructions per call by C function",
        f"(callgrind). The session tools/call above on Python {r.profile['python']}, sampled every 0.5 ms",
        f"({r.profile['samples']} samples, the harness's own left out; bench/profile_warm.py). A sample is charged",
        "to the module running; stdlib helpers and generated code to their caller; asyncio, json and logging are",
        "named with the caller that used them."
        + (" The last column applies each share to the callgrind count: an estimate." if counted else ""),
        "",
        _profile_summary(r.profile["groups"]),
        "",
        header,
        "| --- | ---: |" + (" ---: |" if counted else ""),
    ]
    for name, share in r.profile["groups"].items():
        if share < 0.01:
            continue
        estimate = f" {share * counted / 1e3:,.0f} |" if counted else ""
        lines.append(f"| {name} | {share:.1%} |{estimate}")
    lines += [
        "",
        "Modules: " + ", ".join(f"{name} {share:.1%}" for name, share in list(r.profile["modules"].items())[:12]),
        "",
    ]
    return lines
