"""What the endpoint decides once about a POST body: its era, and so the branch that answers it.

    era        the body's wire: the session REST API, 2026-07-28 (a `_meta` version, or a 2026-07-28 version header),
               or the handshake era (everything else, `initialize` included)
    branch     how the answer goes back, from the era and the mode (`asgi.BUFFERED`):

               era          mode      streamable, may send first   branch
               REST         any       -                            ANSWER
               any          any       not streamable               ANSWER
               any          live      no SSE accepted              ANSWER
               any          live      nothing sent first           WATCH
               any          live      sends first                  STREAM
               any          buffered  no SSE accepted, or silent   ANSWER
               2026-07-28   buffered  sends first                  COLLECT
               handshake    buffered  sends first                  RELAY

A 2026-07-28 call is never relayed, whatever session header it carries: only the handshake branch relays.
"""

from __future__ import annotations

import enum
from typing import Any

from stratus.protocol import versions
from stratus.transport.asgi import Headers
from stratus.transport.session_api import is_rest_call
from stratus.transport.stateless import request_meta_version


class Era(enum.Enum):
    """Whose wire a POST body speaks."""

    REST = "rest"
    """The session REST API (`{"sessionId", "method", "params"}`): answered as JSON, never streamed."""
    STATELESS = "2026-07-28"
    HANDSHAKE = "handshake"


class Branch(enum.Enum):
    """How one POST is answered."""

    ANSWER = "answer"
    """Plain JSON (or 202), once the call ends."""
    WATCH = "watch"
    """Live, and nothing will be sent first: JSON, unless a long silence opens an SSE stream of keep-alives."""
    STREAM = "stream"
    """Live SSE: what the call sends, as it sends it, then its result."""
    COLLECT = "collect"
    """Buffered: what the call sent first and its result, in one SSE body sent whole."""
    RELAY = "relay"
    """Buffered, handshake era: a call that may ask its client runs in the task worker and its stream is relayed
    from the store (`HandshakeTransport.relay`); any other call is collected."""


def era_of(body: Any, headers: Headers) -> Era:
    """The era of a decoded POST body."""
    if is_rest_call(body):
        return Era.REST
    if request_meta_version(body) is not None or headers.get("mcp-protocol-version") in versions.STATELESS_VERSIONS:
        return Era.STATELESS
    return Era.HANDSHAKE


def branch_for(era: Era, body: Any, *, buffered: bool, accepts_sse: bool) -> Branch:
    """The branch that answers `body` (see the module's table)."""
    if era is Era.REST or not accepts_sse or not streamable(body):
        return Branch.ANSWER
    sends_first = may_send_first(era, body)
    if not buffered:
        return Branch.STREAM if sends_first else Branch.WATCH
    if not sends_first:
        return Branch.ANSWER
    return Branch.RELAY if era is Era.HANDSHAKE else Branch.COLLECT


def streamable(body: Any) -> bool:
    """Whether a body's answer may be SSE: one JSON-RPC message, not a batch or an `initialize` (whose answer carries
    the new session's id in a header, which a stream's headers, sent first, could not carry)."""
    if isinstance(body, list):
        return False
    return not (isinstance(body, dict) and body.get("method") == "initialize" and "id" in body)


def may_send_first(era: Era, body: Any) -> bool:
    """Whether a call can send anything on its response before the answer. A handshake-era call can (logs,
    progress, requests to the client); a 2026-07-28 call only when it asked for progress or log messages
    (`progressToken`, the log-level `_meta` key) or listens for notifications."""
    if era is not Era.STATELESS or not isinstance(body, dict) or body.get("method") == "subscriptions/listen":
        return True
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and ("progressToken" in meta or versions.LOG_LEVEL_META in meta)
