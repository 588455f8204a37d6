"""What a warm tools/call bills: the billed duration per call at the template's 512 MB, read from `stratus local`'s
REPORT lines (Lambda's billed duration: the invocation's run, rounded up to the millisecond), for both shapes.

    .venv/bin/python bench/billed_call.py [--calls 200]

One client (the official Python SDK, 2025-11-25) opens a session and makes `--calls` add(2, 3) calls through the
HTTP API (the buffered function) and then through the Function URL (the streaming function, behind the Web Adapter);
the calls after the session's first are the warm ones. State in the Redis at 127.0.0.1:6379, telemetry `emf` as
deployed, two containers per function. The emulator's own overhead (a process boundary, the adapter's forwarding)
is inside the streaming function's figure, as on AWS the Web Adapter's is. A benchmark: it reports, it never fails
on a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
from pathlib import Path

from mcp import Client

from stratus.emulator.local_aws import LocalAws, Options
from stratus.emulator.stack import read_stack

TEMPLATE = Path(__file__).parents[1] / "template.yaml"
SHAPES = {
    "ServerlessHttpApi": "stratus-local-BufferedFunction",
    "StreamingFunctionUrl": "stratus-local-StreamingFunction",
}
GB_SECOND_USD = 0.0000133334
"""arm64, us-east-1 (https://aws.amazon.com/lambda/pricing/)."""


async def warm_calls(aws: LocalAws, door: str, calls: int) -> tuple[int, int]:
    """Billed milliseconds and invocations of `door`'s function over `calls` warm tools/calls."""
    function = SHAPES[door]
    async with Client(f"{aws.url(door)}/mcp", mode="legacy") as client:
        await client.call_tool("add", {"a": 2, "b": 3})
        before = aws.bill.summary().get(function, {})
        for _ in range(calls):
            await client.call_tool("add", {"a": 2, "b": 3})
        after = aws.bill.summary()[function]
    return after["billedMs"] - before.get("billedMs", 0), after["invocations"] - before.get("invocations", 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    environment = {
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"bench-billed-{secrets.token_hex(4)}",
        "STRATUS_SECRET_KEY": secrets.token_hex(32),
        "STRATUS_APP": "examples.add:server",
    }
    with open("/dev/null", "wb") as quiet:
        options = Options(containers=2, environment=environment, output=quiet)
        with LocalAws(read_stack(TEMPLATE, {}), options).running() as aws:
            print(f"{'shape':<40} {'calls':>6} {'invocations':>11} {'billed ms/call':>15} {'USD per million':>16}")
            for door in SHAPES:
                billed, invocations = asyncio.run(warm_calls(aws, door, args.calls))
                per_call = billed / args.calls
                usd = per_call / 1000 * 0.5 * GB_SECOND_USD * 1e6
                shape = f"{door} ({SHAPES[door]})"
                print(f"{shape:<40} {args.calls:>6} {invocations:>11} {per_call:>15.2f} {usd:>16.2f}")


if __name__ == "__main__":
    main()
