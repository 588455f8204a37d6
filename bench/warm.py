"""Warm-latency child of bench/run.py: `python bench/warm.py SUBJECT CALLS WARMUP [--profile N]`.

Imports SUBJECT's Lambda handler, answers WARMUP tools/calls untimed, then times CALLS more one by one with
`perf_counter_ns` and prints one Python literal with the samples' summary (microseconds). Subject
`stratus-legacy` opens a 2025-11-25 session first and calls inside it. With `--profile N` it runs N calls under
cProfile instead and prints the top functions by own time.
"""

from __future__ import annotations

import cProfile
import json
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import wire

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
MODULES = {
    "stratus": "examples.add",
    "stratus-legacy": "examples.add",
    "floor": "floor_app",
    "awslabs": "awslabs_app",
    "sdk": "sdk_app",
    "fastmcp": "fastmcp_app",
    "rmsl": "rmsl_app",
}


def _event_for(subject: str, handler: Handler) -> dict[str, Any]:
    if subject != "stratus-legacy":
        return wire.STATELESS_CALL_EVENT
    opened = handler(wire.http_api_event(wire.HANDSHAKE_INITIALIZE_BODY, wire.BASE_HEADERS), None)
    headers = {key.lower(): value for key, value in opened["headers"].items()}
    session_id = headers["mcp-session-id"]
    handler(wire.http_api_event(wire.HANDSHAKE_INITIALIZED_BODY, wire.handshake_headers(session_id)), None)
    return wire.http_api_event(wire.HANDSHAKE_CALL_BODY, wire.handshake_headers(session_id))


def _other_kinds(subject: str) -> dict[str, dict[str, Any]]:
    """The subject's handshake (2026-07-28 discover where it speaks that revision, else initialize) and tools/list
    events; the floor answers only tools/call, and the legacy run measures only the call in its session."""
    if subject in ("floor", "stratus-legacy"):
        return {}
    if subject in ("stratus", "sdk", "fastmcp"):

        def stateless(body: str, method: str) -> dict[str, Any]:
            headers = {name: value for name, value in wire.STATELESS_HEADERS.items() if name != "mcp-name"}
            return wire.http_api_event(body, {**headers, "mcp-method": method})

        return {
            "discover or initialize": stateless(wire.STATELESS_DISCOVER_BODY, "server/discover"),
            "tools/list": stateless(wire.STATELESS_LIST_BODY, "tools/list"),
        }
    return {
        "discover or initialize": wire.http_api_event(wire.HANDSHAKE_INITIALIZE_BODY, wire.BASE_HEADERS),
        "tools/list": wire.http_api_event(wire.HANDSHAKE_LIST_BODY, wire.BASE_HEADERS),
    }


def _median_us(handler: Handler, event: dict[str, Any], calls: int) -> float:
    response = handler(event, None)
    if response["statusCode"] != 200 or "result" not in json.loads(response["body"]):
        raise SystemExit(f"unexpected response: {response!r}")
    samples = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        handler(event, None)
        samples.append((time.perf_counter_ns() - start) / 1e3)
    return statistics.median(samples)


def _check(response: dict[str, Any]) -> None:
    body = json.loads(response["body"])
    if response["statusCode"] != 200 or "result" not in body or "3" not in json.dumps(body["result"]):
        raise SystemExit(f"unexpected response: {response!r}")


def main() -> None:
    subject, calls, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    handler: Handler = __import__(MODULES[subject], fromlist=["handler"]).handler
    event = _event_for(subject, handler)
    _check(handler(event, None))
    for _ in range(warmup):
        handler(event, None)
    if "--profile" in sys.argv:
        profile_calls = int(sys.argv[sys.argv.index("--profile") + 1])
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(profile_calls):
            handler(event, None)
        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(30)
        return
    clock = time.perf_counter_ns
    samples: list[int] = []
    append = samples.append
    cpu0 = time.process_time()
    for _ in range(calls):
        start = clock()
        handler(event, None)
        append(clock() - start)
    cpu = time.process_time() - cpu0
    kinds = {kind: _median_us(handler, event, max(3, calls // 4)) for kind, event in _other_kinds(subject).items()}
    samples.sort()
    micro = [sample / 1e3 for sample in samples]
    figures = {
        "subject": subject,
        "calls": calls,
        "median_us": statistics.median(micro),
        "p99_us": micro[min(len(micro) - 1, int(len(micro) * 0.99))],
        "mean_us": statistics.fmean(micro),
        "cpu_per_call_us": cpu * 1e6 / calls,
        "kinds_us": kinds,
        "samples_us": micro,
    }
    print(repr(figures))


main()
