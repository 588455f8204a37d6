"""Lambda's event queue: how the stack's asynchronous (`Event`) invocations are delivered, retried and reported
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html), per the function's
`EventInvokeConfig` (`stratus.emulator.event_config`):

- an event waits in the queue for a container (never throttled), and once it has waited past its maximum age it is
  discarded (`EventAgeExceeded`), as is one whose next retry would come later than that;
- a function error (the handler raised, the runtime exited, the invocation timed out) is retried up to
  `MaximumRetryAttempts` times (default 2), one minute after the first attempt and two after the second, both
  times multiplied by the emulator's `time_scale`; then the event is discarded (`RetriesExhausted`);
- a discarded event's invocation record goes to the on-failure destination, a successful one's to the on-success
  destination, when that is a function of the stack and the function's execution role may invoke it
  (`lambda:InvokeFunction`, https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html); the
  record is delivered to it as an asynchronous event in turn. A destination outside the stack, or one the role may
  not invoke, gets nothing: a line in the output says so, as Lambda counts `DestinationDeliveryFailures`;
- "even if your function doesn't return an error, it's possible for it to receive the same event from Lambda
  multiple times" (invocation-async-error-handling.html): with `twice`, every event is delivered twice, each copy
  retried and reported on its own, so a function shows it runs a duplicate once.

The payload limit (1 MB for `Event`, 6 MB for `RequestResponse`) is the Invoke API's (`invoke_api`).
"""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import replace
from datetime import UTC, datetime
from typing import IO, Any, NamedTuple

from stratus.emulator.containers import ClientGoneError, FunctionError, FunctionPool
from stratus.emulator.event_config import EventInvokeConfig
from stratus.emulator.iam import check
from stratus.emulator.proxy_integration import Invocation, collect
from stratus.emulator.stack import Function, Stack

EVENT_PAYLOAD_BYTES = 1024 * 1024
"""Asynchronous invocation payload (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html: 1 MB
since October 2025, 256 KB before; https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html)."""
RETRY_DELAYS_SECONDS = (60.0, 120.0)
"""After the first failed attempt, after the second."""
RETRIES_EXHAUSTED = "RetriesExhausted"
EVENT_AGE_EXCEEDED = "EventAgeExceeded"
SUCCESS = "Success"
_NAME_IN_ARN = re.compile(r"^arn:[^:]+:lambda:[^:]+:\d+:function:([A-Za-z0-9_-]+)(?::[A-Za-z0-9$_-]+)?$")


class Outcome(NamedTuple):
    """How an event's delivery ended: the record's condition, how many attempts ran, the last one's payload."""

    request_id: str
    condition: str
    attempts: int
    payload: Any


async def invoke_once(
    pool: FunctionPool, event: Any, *, queue: bool = False, gone: asyncio.Future[None] | None = None
) -> tuple[Any, bool]:
    """One invocation through `pool`: its payload (a stream collected as text), and whether it is a function error
    (then the payload is the error document). Raises ClientGoneError when `gone` is done before a container is."""
    try:
        async with pool.invocation(queue=queue, gone=gone) as container:
            invocation = Invocation(pool)
            invoked = await invocation.run(container, event)
            if invoked.stream is not None:
                return (await collect(invocation, container, invoked.stream)).decode(errors="replace"), False
            return invoked.payload, False
    except FunctionError as error:
        return {"errorType": error.error_type, "errorMessage": str(error)}, True


class EventQueue:
    """Delivers the stack's asynchronous events in the background, each until it succeeds or is discarded."""

    def __init__(
        self,
        stack: Stack,
        pools: Mapping[str, FunctionPool],
        *,
        time_scale: float = 1.0,
        twice: bool = False,
        output: IO[bytes] | None = None,
    ) -> None:
        self.stack = stack
        self.pools = pools
        self.time_scale = time_scale
        self.twice = twice
        self.output = output
        self._running: set[asyncio.Task[None]] = set()
        self._waiting: set[asyncio.Future[None]] = set()
        """Done when its event's maximum age is reached (or the queue closes) before a container is free."""
        self._closing = asyncio.Event()

    def accept(self, pool: FunctionPool, event: Any) -> None:
        """Queue `event` for `pool`'s function (twice, with `twice`); delivered in the background. A closing queue
        takes nothing more."""
        if self._closing.is_set():
            return
        request_id = str(uuid.uuid4())
        enqueued = asyncio.get_running_loop().time()
        for _ in range(2 if self.twice else 1):
            delivery = asyncio.ensure_future(self._deliver(pool, event, request_id, enqueued))
            self._running.add(delivery)
            delivery.add_done_callback(self._running.discard)

    def close(self) -> None:
        """Drop the events still waiting for a container or a retry; an invocation running ends with its container
        (`drain` waits for that). Nothing is retried or reported any more."""
        self._closing.set()
        for aged in self._waiting:
            _set_done(aged)

    async def drain(self, within: float) -> None:
        """Wait (at most `within` seconds) for the deliveries still running once the queue is closed."""
        if self._running:
            await asyncio.wait(set(self._running), timeout=within)

    def config(self, function: Function) -> EventInvokeConfig:
        default = EventInvokeConfig()
        scaled = replace(default, maximum_event_age_seconds=default.maximum_event_age_seconds * self.time_scale)
        return self.stack.event_configs.get(function.name, scaled)

    async def _deliver(self, pool: FunctionPool, event: Any, request_id: str, enqueued: float) -> None:
        loop = asyncio.get_running_loop()
        config = self.config(pool.function)
        expires = enqueued + config.maximum_event_age_seconds
        attempts = 0
        payload: Any = None
        while True:
            aged: asyncio.Future[None] = loop.create_future()
            timer = loop.call_at(expires, _set_done, aged)
            self._waiting.add(aged)
            try:
                payload, failed = await invoke_once(pool, event, queue=True, gone=aged)
            except ClientGoneError:
                condition = EVENT_AGE_EXCEEDED
                break
            finally:
                timer.cancel()
                self._waiting.discard(aged)
            if self._closing.is_set():
                return
            attempts += 1
            if not failed:
                if config.on_success:
                    self._report(
                        pool.function, config.on_success, event, Outcome(request_id, SUCCESS, attempts, payload)
                    )
                return
            if attempts > config.maximum_retry_attempts:
                condition = RETRIES_EXHAUSTED
                break
            delay = RETRY_DELAYS_SECONDS[min(attempts, len(RETRY_DELAYS_SECONDS)) - 1] * self.time_scale
            if loop.time() + delay > expires:
                condition = EVENT_AGE_EXCEEDED
                break
            self._say(
                f"[{pool.function.name}] async event {request_id}: attempt {attempts} failed; retry in {delay:g} s"
            )
            with suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), delay)
            if self._closing.is_set():
                return
        if self._closing.is_set():
            return
        self._say(f"[{pool.function.name}] async event {request_id} discarded: {condition} after {attempts} attempts")
        if config.on_failure:
            self._report(pool.function, config.on_failure, event, Outcome(request_id, condition, attempts, payload))

    def _report(self, function: Function, destination: str, event: Any, outcome: Outcome) -> None:
        """Send the invocation record to `destination`, if it is a function of the stack the role may invoke."""
        match = _NAME_IN_ARN.match(destination)
        target = self.pools.get(match.group(1)) if match else None
        refusal = f"{destination} is not a function of the stack" if target is None else None
        if target is not None and function.role is not None:
            refusal = check(function.role, function.name, "lambda:InvokeFunction", [target.function.arn])
        if target is None or refusal is not None:
            self._say(f"[{function.name}] DestinationDeliveryFailures: {refusal}")
            return
        self.accept(target, invocation_record(function, event, outcome))

    def _say(self, line: str) -> None:
        output = self.output or sys.stdout.buffer
        output.write(f"{line}\n".encode())
        output.flush()


def invocation_record(function: Function, event: Any, outcome: Outcome) -> dict[str, Any]:
    """The record Lambda sends a destination (invocation-async-retain-records.html): the request, the reason, and
    the last attempt's response (none for an event that never ran)."""
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    record: dict[str, Any] = {
        "version": "1.0",
        "timestamp": now,
        "requestContext": {
            "requestId": outcome.request_id,
            "functionArn": f"{function.arn}:$LATEST",
            "condition": outcome.condition,
            "approximateInvokeCount": outcome.attempts,
        },
        "requestPayload": event,
    }
    if outcome.attempts:
        response: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
        if outcome.condition != SUCCESS:
            response["functionError"] = "Unhandled"
        record["responseContext"] = response
        record["responsePayload"] = outcome.payload
    return record


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
