"""What one connected, idle client bills: the official Python SDK client (2025-11-25) through `stratus local`'s
Function URL, the template's defaults, its GET stream answered as polls; beside the same client with every poll
held to the stream's time limit (`STRATUS_POLL_HOLD_SECONDS` = 839 s), which is how every GET stream was served
before polls: one invocation per client for as long as it stays connected.

    .venv/bin/python bench/idle_client.py [--minutes 10] [--door StreamingFunctionUrl|StreamingRestApi] [--polls-only]
        [--store dynamodb|redis]

Polls are measured from the emulator's REPORT lines (billed duration, rounded up to the millisecond, times the
template's 512 MB). A held stream is billed only when it ends, up to 14 minutes after its client left, so its row is
the time its invocation was seen running, sampled every 100 ms over the spell. Both give GB-seconds over the idle
spell, scaled to one client-hour, and the share of holding one container for the whole spell; and, for the polls, an
idle client's month (730 hours) of what the emulator measures: Lambda requests, GB-seconds, the bytes its logs put
into CloudWatch Logs (`stratus.emulator.log_config`) and the EMF documents among them, at us-east-1's list prices.
State in the embedded DynamoDB `stratus local` runs by default (moto), or in the Redis at 127.0.0.1:6379 with
`--store redis`. A benchmark: it reports, it never fails on a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from mcp import Client

from stratus.emulator.command import quiet_libraries
from stratus.emulator.local_aws import LocalAws, Options
from stratus.emulator.local_dynamodb import embedded_dynamodb
from stratus.emulator.stack import read_stack

TEMPLATE = Path(__file__).parents[1] / "template.yaml"
STREAMING = "stratus-local-StreamingFunction"
HELD_SECONDS = "839"
"""Just below STRATUS_MAX_STREAM_SECONDS (840): a poll that holds as long as a stream could, the old behaviour."""


REQUEST_PRICE = 0.20 / 1e6
GB_SECOND_PRICE = 0.0000133334  # arm64, the template's architecture
LOG_GB_PRICE = 0.50  # CloudWatch Logs, standard ingestion
READ_UNIT_PRICE = 0.125 / 1e6  # DynamoDB on-demand
WRITE_UNIT_PRICE = 0.625 / 1e6
MONTH_SECONDS = 730 * 3600


@contextmanager
def stack(hold: str | None, store: str) -> Iterator[LocalAws]:
    with ExitStack() as held:
        if store == "redis":
            shared = {
                "STRATUS_STORE": "redis://127.0.0.1:6379/0",
                "STRATUS_STORE_PREFIX": f"bench-idle-{secrets.token_hex(4)}",
            }
        else:
            quiet_libraries()  # moto's server logs every request
            server, shared = embedded_dynamodb()
            held.callback(server.stop)
        environment = {
            **shared,
            "STRATUS_SECRET_KEY": secrets.token_hex(32),
            **({"STRATUS_POLL_HOLD_SECONDS": hold} if hold is not None else {}),
        }
        quiet = held.enter_context(open("/dev/null", "wb"))
        options = Options(containers=2, environment=environment, output=quiet)
        yield held.enter_context(LocalAws(read_stack(TEMPLATE, {}), options).running())


SAMPLE_SECONDS = 0.1


async def idle(aws: LocalAws, seconds: float, *, sampled: bool, door: str) -> dict[str, Any]:
    """Connect, list the tools, stay idle for `seconds`, leave; the streaming function's bill over the idle spell
    (`sampled`: the time an invocation was seen running instead)."""
    loop = asyncio.get_running_loop()
    pool = aws.pools[STREAMING]
    async with Client(f"{aws.url(door)}/mcp", mode="legacy") as client:
        await client.list_tools()
        entry = aws.bill.summary().get(STREAMING, {})
        billed, invocations, started = entry.get("billedMs", 0), entry.get("invocations", 0), loop.time()
        logged, documents = entry.get("logBytes", 0), entry.get("emfDocuments", 0)
        reads, writes = entry.get("readUnits", 0.0), entry.get("writeUnits", 0.0)
        running = 0
        while loop.time() - started < seconds:  # the client's idle spell: the measured quantity
            await asyncio.sleep(SAMPLE_SECONDS)
            running += pool.busy > 0
        wall = loop.time() - started
        units = aws.bill.summary()[STREAMING]  # before the client leaves: its DELETE is not idling
    await asyncio.sleep(1.0)  # a poll is billed when it ends: let the emulator record the client's last one
    entry = aws.bill.summary()[STREAMING]
    gb = entry["memoryMb"] / 1024
    billed_s = running * SAMPLE_SECONDS if sampled else (entry["billedMs"] - billed) / 1000
    month = MONTH_SECONDS / wall
    requests, gb_seconds = (entry["invocations"] - invocations) * month, gb * billed_s * month
    log_bytes = (entry["logBytes"] - logged) * month
    read_units, write_units = (units["readUnits"] - reads) * month, (units["writeUnits"] - writes) * month
    usd = {
        "requestsUsd": requests * REQUEST_PRICE,
        "durationUsd": gb_seconds * GB_SECOND_PRICE,
        "logsUsd": log_bytes / 1e9 * LOG_GB_PRICE,
        "readUnitsUsd": read_units * READ_UNIT_PRICE,
        "writeUnitsUsd": write_units * WRITE_UNIT_PRICE,
    }
    return {
        "idleSeconds": round(wall, 1),
        "invocations": entry["invocations"] - invocations,
        "billedSeconds": round(billed_s, 3),
        "gbSecondsPerClientHour": round(gb * billed_s * 3600 / wall, 3),
        "shareOfHeldContainer": round(billed_s / wall, 5),
        "logBytes": entry["logBytes"] - logged,
        "emfDocuments": entry["emfDocuments"] - documents,
        "readUnits": units["readUnits"] - reads,
        "writeUnits": units["writeUnits"] - writes,
        "month": {
            "requests": round(requests),
            "gbSeconds": round(gb_seconds, 1),
            "logMB": round(log_bytes / 1e6, 2),
            "readUnits": round(read_units),
            "writeUnits": round(write_units),
            **{name: round(value, 4) for name, value in usd.items()},
            "totalUsd": round(sum(usd.values()), 4),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--door", choices=("StreamingFunctionUrl", "StreamingRestApi"), default="StreamingFunctionUrl")
    parser.add_argument("--polls-only", action="store_true", help="leave out the held-stream row")
    parser.add_argument("--store", choices=("dynamodb", "redis"), default="dynamodb")
    args = parser.parse_args()
    rows = [("polls (defaults)", None)] + ([] if args.polls_only else [("held streams (before polls)", HELD_SECONDS)])
    figures = {}
    for label, hold in rows:
        with stack(hold, args.store) as aws:
            figures[label] = asyncio.run(idle(aws, args.minutes * 60, sampled=hold is not None, door=args.door))
    print(f"{'GET stream':<30} {'idle s':>7} {'invocations':>11} {'billed s':>9} {'GB-s/client-hour':>17} {'share':>7}")
    for label, row in figures.items():
        print(
            f"{label:<30} {row['idleSeconds']:>7} {row['invocations']:>11} {row['billedSeconds']:>9} "
            f"{row['gbSecondsPerClientHour']:>17} {row['shareOfHeldContainer']:>7.2%}"
        )
    polls = figures["polls (defaults)"]
    month = polls["month"]
    print(
        f"an idle client's month through {args.door} on {args.store} (polls): {month['requests']:,} requests "
        f"${month['requestsUsd']}, {month['gbSeconds']} GB-s ${month['durationUsd']}, logs {month['logMB']} MB "
        f"${month['logsUsd']} ({polls['emfDocuments']} EMF documents in the spell), DynamoDB "
        f"{month['readUnits']:,} read "
        f"units ${month['readUnitsUsd']} and {month['writeUnits']:,} write units ${month['writeUnitsUsd']}: "
        f"${month['totalUsd']}"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
