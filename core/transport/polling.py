"""Streams answered as polls: how long one stays open with nothing to relay, and when its client comes back.

Lambda bills a streamed response for as long as the invocation runs, and a response is not interrupted when its
client's connection breaks ("Configuring a Lambda function to stream responses", Lambda developer guide:
https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html). The 2025-11-25 transport lets a
server end any SSE stream after an event that carries an `id`, suggesting a `retry:` delay, and the client comes
back with GET and `Last-Event-ID` (Streamable HTTP, "Resumability and Redelivery"). Every stream's events are in the
store, so a stream with nothing to relay ends after a short hold, and the next poll, on any container, relays what
happened since: an idle client costs one short invocation per `retry`, not a container held for 14 minutes.

Rules learned from the official clients (Python SDK 1.30 and 2.3, TypeScript SDK 1.32.2):
- every poll's answer carries at least one event with an id (the TypeScript client forgets its place otherwise);
- a poll is answered 200 while work is pending, never with an error (all three give up after two failed polls);
- both Python clients reconnect a call's stream by recursion and fail after about 950 polls of one request, so a
  call's polls stretch their `retry:` as they add up (`call_retry_ms`). The count travels in the id of the event
  that ends each poll (`<token>-<seq>.<polls>`); the call's own events keep their one id wherever they are replayed.
"""

from __future__ import annotations

from stratus.protocol.notifications import event_number

CALL_RETRY_MS = 1000
"""The `retry:` a call's stream suggests at first: its result is worth fetching soon."""
STRETCH_AFTER_POLLS = 50
"""Past this many polls of one call, each poll's `retry:` grows in proportion to the count."""
MAX_CALL_RETRY_MS = 60_000
"""The longest `retry:` a call's poll suggests. At the stretch above, 950 polls span about 2.5 hours."""


# A plain class: a NamedTuple's class costs a cold start more to create (docs/benchmarks.md).
class Polling:
    """How streams end when they have nothing to relay (`STRATUS_POLL_HOLD_SECONDS`, `STRATUS_POLL_RETRY_SECONDS`),
    and which streams do (`every_stream`, on Lambda: `Settings.lambda_host`)."""

    __slots__ = ("every_stream", "hold_seconds", "retry_ms")

    def __init__(self, hold_seconds: float = 0.0, retry_seconds: float = 5.0, *, every_stream: bool = False) -> None:
        self.hold_seconds = hold_seconds
        """A stream with nothing to relay for this long ends; 0 ends it once it relayed what is already there."""
        self.retry_ms = max(1, round(retry_seconds * 1000))
        """The `retry:` a session's ended GET or `/events` stream suggests."""
        self.every_stream = every_stream
        """Streams of sessions before 2025-11-25 end as polls too, rather than being held to `max_stream_seconds`: on
        Lambda a stream runs, billed and holding its container, until it ends, however soon its client left. The
        official Python clients (SDK 1.30 and 2.3) come back after any GET stream ends, with `Last-Event-ID` and
        after the `retry:` they were given, whatever version they negotiated."""


def call_retry_ms(polls: int) -> int:
    """The `retry:` to suggest after a call's stream was polled `polls` times: `CALL_RETRY_MS` for the first
    `STRETCH_AFTER_POLLS`, then growing with the count, so a long call is polled ever less often and no client
    reaches the ~950 recursive reconnections the Python SDK's clients survive before the call ends."""
    return min(MAX_CALL_RETRY_MS, CALL_RETRY_MS * max(STRETCH_AFTER_POLLS, polls) // STRETCH_AFTER_POLLS)


def call_event_id(token: str, seq: int, polls: int = 0) -> str:
    """A call stream's event id: `<token>-<seq>`, with `.<polls>` once its stream has been polled."""
    return f"{token}-{seq}" if polls == 0 else f"{token}-{seq}.{polls}"


def parse_call_position(text: str) -> tuple[int, int] | None:
    """The event number and poll count of the part of a call stream's event id after `<token>-`; None if it names no
    event."""
    seq, dot, polls = text.partition(".")
    seq_number, poll_number = event_number(seq), event_number(polls) if dot else 0
    if seq_number is None or poll_number is None:
        return None
    return seq_number, poll_number
