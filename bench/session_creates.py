"""`python bench/session_creates.py [--creates N] [--store-timeout S] [--deadline S]` (the project's venv): N (2,000)
sequential `POST /session` to one `stratus serve` on DynamoDB, moto's server (bench/moto_serve.py, a process of its
own), with no session limit (`MCP_HTTP_MAX_SESSIONS=0`): the run of the report that writes sent twice answered 500
(docs/reliability.md, "Writes sent twice").

Prints the status counts; the per-create time (median, p99); the requests moto's server received while the
creates ran (one per create, more where botocore sent a transaction again after a read timeout, each request's
answer being awaited at most the store timeout); the "unhandled error" lines of the server's log; the live
sessions `/health` reports at the end (one per 200); and the `GET /health` time at 100 sessions and at the end:
the median over `--health-samples` requests, each made after the server's census cache (5 s) has expired, beside
the census time the server itself reports. Stops creating at `--deadline` seconds; every request is bounded.

moto's server runs as bench/moto_serve.py does, but drops moto's record of every model instance once a second
(`reset_model_data`, the registry behind moto's dashboard; the tables are untouched): moto 5.2 copies a whole table
for each TransactWriteItems (to roll back), and that registry keeps every copy, so 2,000 creates grow its process
past 15 GB. Each transaction still copies the table: per-create times grow with the table, and are moto's.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from stratus.transport.health import CENSUS_SECONDS
from tests.fixtures.processes import stratus_process

FAKE_AWS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
REQUEST_SECONDS = 30.0


def moto_child(table: str) -> None:
    """`--moto-child TABLE`: moto's server with TABLE created; prints its endpoint, serves until stdin closes."""
    import threading

    import boto3
    from moto.core.model_instances import reset_model_data

    from stratus.stores.dynamodb.schema import create_table
    from tests.fixtures.moto_server import SerialMotoServer

    server = SerialMotoServer()
    endpoint = server.start()
    keys = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench"}
    create_table(boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", **keys), table)
    stop = threading.Event()

    def forget_instances() -> None:
        while not stop.wait(1.0):
            reset_model_data()

    threading.Thread(target=forget_instances, name="moto-forget", daemon=True).start()
    print(endpoint, flush=True)
    sys.stdin.read()
    stop.set()
    server.stop()


def moto_requests(log: Path) -> int:
    """Requests moto's server has answered, once it has answered every one it had (werkzeug logs a line each,
    colored when not 200; requests a client gave up on are still served): the count when it has not grown for a
    second (at most 60 s)."""
    count, ends = -1, time.monotonic() + 60
    while time.monotonic() < ends:
        now = sum(1 for line in log.read_text(errors="replace").splitlines() if "POST / HTTP/1.1" in line)
        if now == count:
            break
        count = now
        time.sleep(1.0)  # a benchmark waiting for moto's log to settle, bounded
    return count


def stored(endpoint: str, table: str) -> dict[str, int]:
    """What the table holds, read directly: live session items, roster entries, the roster's count."""
    import boto3

    keys = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench"}
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", **keys)
    figures = {"sessions": 0, "roster entries": 0, "roster count": 0}
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        for item in page["Items"]:
            kind = item["SK"]["S"]
            if kind == "session" and "ended" not in item:
                figures["sessions"] += 1
            elif item["PK"]["S"].endswith("#roster"):
                if kind == "#count":
                    figures["roster count"] = int(float(item["count"]["N"]))
                else:
                    figures["roster entries"] += 1
    return figures


def health(http: httpx.Client, samples: int) -> dict[str, Any]:
    """`GET /health`, each sample after the census cache has expired: client time, server-reported census time."""
    walls, censuses, active = [], [], None
    for _ in range(samples):
        time.sleep(CENSUS_SECONDS + 0.1)  # a benchmark waiting out the server's cache, not a test
        started = time.perf_counter()
        answer = http.get("/health")
        walls.append((time.perf_counter() - started) * 1000)
        body = answer.json()
        censuses.append(body["store"].get("latencyMs", float("nan")))
        active = body.get("sessions", {}).get("activeSessions")
    return {
        "median_ms": round(statistics.median(walls), 1),
        "census_ms": round(statistics.median(censuses), 1),
        "active": active,
    }


def run(creates: int, store_timeout: float, deadline: float, samples: int, log: IO[bytes], moto_log: Path) -> None:
    table = f"bench-creates-{secrets.token_hex(4)}"
    moto = subprocess.Popen(
        [sys.executable, __file__, "--moto-child", table],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=moto_log.open("wb"),
        text=True,
    )
    assert moto.stdin is not None and moto.stdout is not None
    try:
        endpoint = moto.stdout.readline().strip()
        if not endpoint.startswith("http://"):
            raise SystemExit("moto's server did not start")
        environment = {
            **FAKE_AWS,
            "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
            "STRATUS_STORE": f"dynamodb://{table}",
            "STRATUS_STORE_TIMEOUT_SECONDS": str(store_timeout),
            "STRATUS_SECRET_KEY": secrets.token_hex(32),
            "MCP_HTTP_MAX_SESSIONS": "0",
        }
        with (
            stratus_process("examples.add:server", environment, output=log) as url,
            httpx.Client(base_url=url, timeout=REQUEST_SECONDS) as http,
        ):
            statuses: Counter[int] = Counter()
            times: list[float] = []
            report: dict[str, Any] = {}
            ends = time.monotonic() + deadline
            sent = -moto_requests(moto_log)
            for index in range(creates):
                if time.monotonic() > ends:
                    print(f"deadline: stopped after {index} creates")
                    break
                started = time.perf_counter()
                try:
                    status = http.post("/session", headers={"content-type": "application/json"}).status_code
                except httpx.TimeoutException:
                    status = 0  # no answer within REQUEST_SECONDS
                times.append((time.perf_counter() - started) * 1000)
                statuses[status] += 1
                if index + 1 == min(100, creates):
                    sent += moto_requests(moto_log)
                    report["health_at_100"] = health(http, samples)
                    sent -= moto_requests(moto_log)
            sent += moto_requests(moto_log)
            report["health_at_end"] = health(http, samples)
        report["stored"] = stored(endpoint, table)
    finally:
        moto.stdin.close()
        moto.wait(timeout=30)
    log.flush()
    unhandled = Path(log.name).read_text(errors="replace").count("unhandled error")
    print(f"creates: {sum(statuses.values())}, statuses: {dict(sorted(statuses.items()))}")
    print(f"per create: median {statistics.median(times):.1f} ms, p99 {statistics.quantiles(times, n=100)[98]:.1f} ms")
    print(f"requests moto received for them: {sent} ({sent - sum(statuses.values())} more than one per create)")
    print(f'"unhandled error" lines in the server log: {unhandled}')
    print(f"in the table: {report['stored']}")
    for level, when in (("health_at_100", "at 100 creates"), ("health_at_end", "at the end")):
        if level in report:
            figures = report[level]
            print(
                f"GET /health {when}: {figures['active']} live sessions, median {figures['median_ms']} ms"
                f" (census {figures['census_ms']} ms as the server reports it; {samples} uncached samples)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--creates", type=int, default=2000)
    parser.add_argument("--store-timeout", type=float, default=2.0, help="STRATUS_STORE_TIMEOUT_SECONDS (2.0)")
    parser.add_argument("--deadline", type=float, default=900.0, help="stop creating after this many seconds")
    parser.add_argument("--health-samples", type=int, default=5)
    parser.add_argument("--moto-child", metavar="TABLE", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.moto_child:
        moto_child(arguments.moto_child)
        return
    with tempfile.TemporaryDirectory() as folder:
        server_log = Path(folder) / "stratus.log"
        with server_log.open("wb") as log:
            run(
                arguments.creates,
                arguments.store_timeout,
                arguments.deadline,
                arguments.health_samples,
                log,
                Path(folder) / "moto.log",
            )


main()
