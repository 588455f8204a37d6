"""Warm-path child of bench/run.py: `python bench/warm_session.py SUBJECT CALLS POOL [--profile-warm BATCHES]`.

The buffered handler's tools/call in a handshake-era (2025-11-25) session, as Lambda delivers it: `initialize` and
`notifications/initialized` first, then every call with a fresh event, parsed from JSON as the runtime parses each
invocation's. POOL events are parsed before any call, and 200 of them go to a warm-up; then CALLS are timed one by
one and one Python literal with the median, p99 and CPU per call (us) is printed. Two runs under callgrind with
the same POOL and different CALLS differ only by the calls: their difference over the count is instructions per
call. With `--profile-warm BATCHES` that many batches of 1000 calls run under a CPU-time sampler instead
(profile_warm.py), each batch's events parsed with the sampler stopped.

SUBJECT is `stratus` (examples/add.py, memory store), `awslabs` (awslabs_app.py, no session store: its default) or
`adapter` (adapter_floor_app.py: the Lambda adapter around an app that does no MCP work, its own share).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import wire

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
MODULES = {"stratus": "examples.add", "awslabs": "awslabs_app", "adapter": "adapter_floor_app"}
WARMUP = 200
PROFILE_BATCH = 1000


def open_session(handler: Handler) -> str:
    """Initialize a 2025-11-25 session; the raw JSON of a tools/call event inside it."""
    opened = handler(wire.http_api_event(wire.HANDSHAKE_INITIALIZE_BODY, wire.BASE_HEADERS), None)
    headers = {key.lower(): value for key, value in opened["headers"].items()}
    session = wire.handshake_headers(headers["mcp-session-id"])
    handler(wire.http_api_event(wire.HANDSHAKE_INITIALIZED_BODY, session), None)
    return json.dumps(wire.http_api_event(wire.HANDSHAKE_CALL_BODY, session))


def check(response: dict[str, Any]) -> None:
    body = json.loads(response["body"])
    if response["statusCode"] != 200 or "3" not in json.dumps(body.get("result")):
        raise SystemExit(f"unexpected response: {response!r}")


def main() -> None:
    subject, calls, pool = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    handler: Handler = __import__(MODULES[subject], fromlist=["handler"]).handler
    raw = open_session(handler)
    events = [json.loads(raw) for _ in range(max(pool, calls) + WARMUP + 1)]
    check(handler(events.pop(), None))
    for _ in range(WARMUP):
        handler(events.pop(), None)
    if "--profile-warm" in sys.argv:
        import profile_warm

        def run(batch: list[dict[str, Any]]) -> None:
            for event in batch:
                handler(event, None)

        batches = int(sys.argv[sys.argv.index("--profile-warm") + 1])
        print(repr(profile_warm.sample(run, batches, lambda: [json.loads(raw) for _ in range(PROFILE_BATCH)])))
        return
    clock = time.perf_counter_ns
    samples: list[int] = []
    cpu0 = time.process_time()
    for _ in range(calls):
        event = events.pop()
        start = clock()
        handler(event, None)
        samples.append(clock() - start)
    cpu = time.process_time() - cpu0
    micro = sorted(sample / 1e3 for sample in samples)
    print(
        repr(
            {
                "subject": subject,
                "python": ".".join(map(str, sys.version_info[:3])),
                "calls": calls,
                "median_us": statistics.median(micro) if micro else 0.0,
                "p99_us": micro[min(len(micro) - 1, int(len(micro) * 0.99))] if micro else 0.0,
                "cpu_per_call_us": cpu * 1e6 / max(calls, 1),
            }
        )
    )


main()
