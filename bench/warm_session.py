"""Warm-path child of bench/run.py: `python bench/warm_session.py SUBJECT CALLS POOL [--profile-warm BATCHES]`.

The buffered handler's tools/call in a handshake-era (2025-11-25) session, as Lambda delivers it: `initialize` and
`notifications/initialized` first, then every call with a fresh event, parsed from JSON as the runtime parses each
invocation's. POOL events are parsed before any call, and 200 of them go to a warm-up; then CALLS are timed one by
one and one Python literal with the median, p99 and CPU per call (us) is printed. Two runs under callgrind with
the same POOL and different CALLS differ only by the calls: their difference over the count is instructions per
call. With `--profile-warm BATCHES` that many batches of 1000 calls run under a CPU-time sampler instead
(profile_warm.py), each batch's events parsed with the sampler stopped.

Like for like (docs/benchmarks.md, "Warm path"): every event is an HTTP API payload 2.0 POST with the headers a
client and API Gateway send (wire.client_http_api_event: 11 or 12), every call gets a Lambda context of its own
(Stratus arms its deadline from it), and the anchor is written as its README writes it.

SUBJECT is `stratus` (examples/add.py, memory store, telemetry `local`), `stratus-emf` (the same with the deployed
template's telemetry, `emf`: its metric document written once per invocation, here to /dev/null), `stratus-stateless`
(a 2026-07-28 tools/call: no session, the revision's own headers and `_meta`), `awslabs` (awslabs_session_app.py, its
sessions in memory) or `adapter` (adapter_floor_app.py: the Lambda adapter around an app that does no MCP work, its
own share).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import wire

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
MODULES = {
    "stratus": "examples.add",
    "stratus-emf": "examples.add",
    "stratus-stateless": "examples.add",
    "awslabs": "awslabs_session_app",
    "adapter": "adapter_floor_app",
}
TELEMETRY = {"stratus-emf": "emf"}
WARMUP = 200
PROFILE_BATCH = 1000


def open_session(handler: Handler, subject: str) -> str:
    """The raw JSON of a tools/call event: inside a 2025-11-25 session initialized first, or (`stratus-stateless`)
    a 2026-07-28 call, which needs none."""
    if subject == "stratus-stateless":
        return json.dumps(wire.client_http_api_event(wire.STATELESS_CALL_BODY, _mcp(wire.STATELESS_HEADERS)))
    opened = handler(wire.client_http_api_event(wire.HANDSHAKE_INITIALIZE_BODY, {}), _context(0))
    headers = {key.lower(): value for key, value in opened["headers"].items()}
    session = _mcp(wire.handshake_headers(headers["mcp-session-id"]))
    handler(wire.client_http_api_event(wire.HANDSHAKE_INITIALIZED_BODY, session), _context(1))
    return json.dumps(wire.client_http_api_event(wire.HANDSHAKE_CALL_BODY, session))


def _mcp(headers: dict[str, str]) -> dict[str, str]:
    """The MCP headers of `headers` (the client's own are wire.CLIENT_HEADERS)."""
    return {name: value for name, value in headers.items() if name.startswith("mcp-")}


def _context(number: int) -> wire.LambdaContext:
    return wire.LambdaContext(f"bench-{number:08d}")


def check(response: dict[str, Any]) -> None:
    body = json.loads(response["body"])
    if response["statusCode"] != 200 or "3" not in json.dumps(body.get("result")):
        raise SystemExit(f"unexpected response: {response!r}")


def main() -> None:
    subject, calls, pool = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.environ["STRATUS_TELEMETRY"] = TELEMETRY.get(subject, "local")
    handler: Handler = __import__(MODULES[subject], fromlist=["handler"]).handler
    printed, sys.stdout = sys.stdout, open(os.devnull, "w")  # noqa: SIM115 - EMF documents go nowhere
    raw = open_session(handler, subject)
    count = max(pool, calls) + WARMUP + 1
    events = [(json.loads(raw), _context(number)) for number in range(2, count + 2)]
    check(handler(*events.pop()))
    for _ in range(WARMUP):
        handler(*events.pop())
    if "--profile-warm" in sys.argv:
        import profile_warm

        def run(batch: list[tuple[dict[str, Any], wire.LambdaContext]]) -> None:
            for event, context in batch:
                handler(event, context)

        batches = int(sys.argv[sys.argv.index("--profile-warm") + 1])
        sampled = profile_warm.sample(
            run, batches, lambda: [(json.loads(raw), _context(number)) for number in range(PROFILE_BATCH)]
        )
        sys.stdout = printed
        print(repr(sampled))
        return
    clock = time.perf_counter_ns
    samples: list[int] = []
    cpu0 = time.process_time()
    for _ in range(calls):
        event, context = events.pop()
        start = clock()
        handler(event, context)
        samples.append(clock() - start)
    cpu = time.process_time() - cpu0
    sys.stdout = printed
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
