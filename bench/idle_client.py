"""What one connected, idle client bills: the official Python SDK client (2025-11-25) through `stratus local`'s
Function URL, the template's defaults, its GET stream answered as polls; beside the same client with every poll
held to the stream's time limit (`STRATUS_POLL_HOLD_SECONDS` = 839 s), which is how every GET stream was served
before polls: one invocation per client for as long as it stays connected.

    .venv/bin/python bench/idle_client.py [--minutes 10] [--door StreamingFunctionUrl|StreamingRestApi] [--polls-only]

Polls are measured from the emulator's REPORT lines (billed duration, rounded up to the millisecond, times the
template's 512 MB). A held stream is billed only when it ends, up to 14 minutes after its client left, so its row is
the time its invocation was seen running, sampled every 100 ms over the spell. Both give GB-seconds over the idle
spell, scaled to one client-hour, and the share of holding one container for the whole spell. State in the Redis
at 127.0.0.1:6379. A benchmark: it reports, it never fails on a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import Client

from stratus.emulator.local_aws import LocalAws, Options
from stratus.emulator.stack import read_stack

TEMPLATE = Path(__file__).parents[1] / "template.yaml"
STREAMING = "stratus-local-StreamingFunction"
HELD_SECONDS = "839"
"""Just below STRATUS_MAX_STREAM_SECONDS (840): a poll that holds as long as a stream could, the old behaviour."""


@contextmanager
def stack(hold: str | None) -> Iterator[LocalAws]:
    environment = {
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"bench-idle-{secrets.token_hex(4)}",
        "STRATUS_SECRET_KEY": secrets.token_hex(32),
        **({"STRATUS_POLL_HOLD_SECONDS": hold} if hold is not None else {}),
    }
    with open("/dev/null", "wb") as quiet:
        options = Options(containers=2, environment=environment, output=quiet)
        with LocalAws(read_stack(TEMPLATE, {}), options).running() as aws:
            yield aws


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
        running = 0
        while loop.time() - started < seconds:  # the client's idle spell: the measured quantity
            await asyncio.sleep(SAMPLE_SECONDS)
            running += pool.busy > 0
        wall = loop.time() - started
    await asyncio.sleep(1.0)  # a poll is billed when it ends: let the emulator record the client's last one
    entry = aws.bill.summary()[STREAMING]
    gb = entry["memoryMb"] / 1024
    billed_s = running * SAMPLE_SECONDS if sampled else (entry["billedMs"] - billed) / 1000
    return {
        "idleSeconds": round(wall, 1),
        "invocations": entry["invocations"] - invocations,
        "billedSeconds": round(billed_s, 3),
        "gbSecondsPerClientHour": round(gb * billed_s * 3600 / wall, 3),
        "shareOfHeldContainer": round(billed_s / wall, 5),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--door", choices=("StreamingFunctionUrl", "StreamingRestApi"), default="StreamingFunctionUrl")
    parser.add_argument("--polls-only", action="store_true", help="leave out the held-stream row")
    args = parser.parse_args()
    rows = [("polls (defaults)", None)] + ([] if args.polls_only else [("held streams (before polls)", HELD_SECONDS)])
    figures = {}
    for label, hold in rows:
        with stack(hold) as aws:
            figures[label] = asyncio.run(idle(aws, args.minutes * 60, sampled=hold is not None, door=args.door))
    print(f"{'GET stream':<30} {'idle s':>7} {'invocations':>11} {'billed s':>9} {'GB-s/client-hour':>17} {'share':>7}")
    for label, row in figures.items():
        print(
            f"{label:<30} {row['idleSeconds']:>7} {row['invocations']:>11} {row['billedSeconds']:>9} "
            f"{row['gbSecondsPerClientHour']:>17} {row['shareOfHeldContainer']:>7.2%}"
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
