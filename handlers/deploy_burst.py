"""`stratus check-deploy --burst N`: what a door answers when more requests come at once than its function may run.

One `ping` is sent alone first: its answer is the function's own (400 without a session, or 401 behind
authentication). Then N are released together; any other answer is the door's refusal, and is described by what a
client retries on: the status, `Retry-After`, and `x-amzn-ErrorType` (the Function URL's `TooManyRequestsException`).
A door refuses only past the function's concurrency: its reservation (`StreamingReservedConcurrency`), or the
account's unreserved pool, which a burst from one machine rarely reaches. Every request invokes the function: send
a burst at a stack in use only knowing that its own clients may be refused for that moment.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress

from stratus.handlers.deploy_http import Answer, send

MAX_BURST = 200
START_SECONDS = 30.0
"""How long the burst's threads wait for each other before sending anyway."""
_PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def at_once(url: str, count: int) -> tuple[str, str]:
    """What `count` pings at once met at `url`: the finding (the door's refusals, or none) and the counts behind it
    (printed, never compared: how many are refused depends on timing)."""
    alone = send("POST", url, _PING, _HEADERS)[0]
    start = threading.Barrier(count)

    def one(_: int) -> str | None:
        with suppress(threading.BrokenBarrierError):  # a thread that could not start in time: the others go anyway
            start.wait(timeout=START_SECONDS)
        answer = send("POST", url, _PING, _HEADERS)
        return None if answer[0] == alone else _refusal(answer)

    with ThreadPoolExecutor(max_workers=count) as pool:
        answers = list(pool.map(one, range(count)))
    refused = Counter(answer for answer in answers if answer is not None)
    finding = "; ".join(sorted(refused)) if refused else "none refused"
    counts = f"{count} at once, answered as alone ({alone}): {count - sum(refused.values())}"
    return finding, counts + "".join(f", {described}: {times}" for described, times in sorted(refused.items()))


def _refusal(answer: Answer) -> str:
    status, headers, _ = answer
    described = f"refused {status}"
    if "retry-after" in headers:
        described += " with Retry-After"
    if "x-amzn-errortype" in headers:
        described += f" ({headers['x-amzn-errortype'][0]})"
    return described
