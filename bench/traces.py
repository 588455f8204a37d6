"""What tracing costs: Stratus's buffered handler (examples.add, the memory store) with `STRATUS_TRACING=off` beside
the same with `otlp`, each span exported over OTLP/HTTP to a receiver on 127.0.0.1 that answers as a collector does
(200, an empty protobuf answer), flushed at the end of every invocation as on Lambda.

    .venv/bin/python bench/traces.py [--runs 20] [--calls 2000] [--repeats 3]

Both run in the project's venv (the one with the `otel` extra; the bench venv of bench/run.py has no OpenTelemetry),
interleaved, through the same children as the main table: bench/cold.py (a fresh process imports the handler and
answers one tools/call: CPU and wall ms of that span, and the modules it imported) and bench/warm.py (warm
tools/calls one by one: median, p99 and CPU per call). With valgrind, the instructions of each whole cold-start child
too. On, every invocation posts its spans before it returns, so the warm figures hold that round trip to 127.0.0.1;
to X-Ray it would be a round trip to the Region's endpoint (a few ms, and billed). A benchmark: it reports, it never
fails on a figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import measure

SUBJECT = "stratus"


class _Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the exporter's connection open, as a collector does
    exports = 0
    received = 0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        type(self).exports += 1
        type(self).received += len(body)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def receiver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="cold starts per setting")
    parser.add_argument("--calls", type=int, default=2000, help="warm calls per process")
    parser.add_argument("--repeats", type=int, default=3, help="warm processes per setting")
    args = parser.parse_args()
    python = Path(sys.executable)
    base = {**measure.child_env(), "STRATUS_SECRET_KEY": "0" * 64}
    with receiver() as url:
        settings = {
            "off": {**base, "STRATUS_TRACING": "off"},
            "on": {**base, "STRATUS_TRACING": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": url},
        }
        for env in settings.values():  # once untimed: the .pyc files every later run reads
            measure.cold(python, SUBJECT, env)
        cold: dict[str, list[dict[str, Any]]] = {name: [] for name in settings}
        for run in range(args.runs):
            for name in sorted(settings, reverse=run % 2 == 1):
                cold[name].append(measure.cold(python, SUBJECT, settings[name]))
        warm: dict[str, list[dict[str, Any]]] = {name: [] for name in settings}
        for repeat in range(args.repeats):
            for name in sorted(settings, reverse=repeat % 2 == 1):
                warm[name].append(measure.warm(python, SUBJECT, args.calls, max(200, args.calls // 10), settings[name]))
        instructions = (
            {name: measure.instructions(python, SUBJECT, env) / 1e6 for name, env in settings.items()}
            if measure.valgrind() is not None
            else None
        )
        exports, received = _Receiver.exports, _Receiver.received

    def cold_median(name: str, key: str) -> float:
        return statistics.median(run[key] for run in cold[name])

    def warm_median(name: str, key: str) -> float:
        return statistics.median(process[key] for process in warm[name])

    rows = [
        ("cold: import+build+1st call, CPU ms", cold_median("off", "cpu_ms"), cold_median("on", "cpu_ms")),
        ("cold: import+build+1st call, wall ms", cold_median("off", "wall_ms"), cold_median("on", "wall_ms")),
        ("cold: modules imported by the span", cold_median("off", "modules_added"), cold_median("on", "modules_added")),
        ("warm: tools/call median, us", warm_median("off", "median_us"), warm_median("on", "median_us")),
        ("warm: tools/call p99, us", warm_median("off", "p99_us"), warm_median("on", "p99_us")),
        ("warm: CPU per call, us", warm_median("off", "cpu_per_call_us"), warm_median("on", "cpu_per_call_us")),
    ]
    if instructions is not None:
        rows.append(("cold: whole process, M instructions", instructions["off"], instructions["on"]))
    print("| figure | traces off | traces on (OTLP to 127.0.0.1) | on/off |")
    print("| --- | ---: | ---: | ---: |")
    for label, off, on in rows:
        print(f"| {label} | {off:,.1f} | {on:,.1f} | {on / off:.2f}x |")
    opened = sorted({name for run in cold["off"] for name in run["watched"]})
    print(
        f"\n{args.runs} cold starts and {args.repeats} x {args.calls} warm calls per setting, interleaved; "
        f"{exports} exports received, {received / max(exports, 1):,.0f} bytes each; "
        f"off imported {', '.join(opened) or 'none'} of the watched modules."
    )


if __name__ == "__main__":
    main()
