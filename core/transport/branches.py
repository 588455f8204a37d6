"""What the endpoint decides once about a POST body: its era, and so the branch that answers it.

    era        the body's wire: the session REST API, 2026-07-28 (a `_meta` version, or a 2026-07-28 version header),
               or the handshake era (everything else, `initialize` included)
    branch     how the answer goes back, from the era and the mode (`asgi.BUFFERED`):

               era          mode      streamable, may send first   branch
               rest         any       -                            answer
               any          any       not streamable               answer
               any          live      no SSE accepted              answer
               any          live      nothing sent first           watch
               any          live      sends first                  stream
               any          buffered  no SSE accepted, or silent   answer
               2026-07-28   buffered  sends first                  collect
               handshake    buffered  sends first                  relay

A 2026-07-28 call is never relayed, whatever session header it carries: only the handshake branch relays.
"""

from __future__ import annotations

from typing import Any, Literal

from stratus.protocol import versions
from stratus.transport.asgi import Headers
from stratus.transport.session_api import is_rest_call
from stratus.transport.stateless import request_meta_version

# Plain strings rather than Enums: these are read on every request, and each Enum class costs a cold start.
Era = Literal["rest", "2026-07-28", "handshake"]
"""Whose wire a POST body speaks: the session REST API (`{"sessionId", "method", "params"}`, answered as JSON,
never streamed), 2026-07-28, or the handshake era."""
Branch = Literal["answer", "watch", "stream", "collect", "relay"]
"""How one POST is answered:

- answer: plain JSON (or 202), once the call ends;
- watch: live, and nothing will be sent first: JSON, unless a long silence opens an SSE stream of keep-alives;
- stream: live SSE: what the call sends, as it sends it, then its result;
- collect: buffered: what the call sent first and its result, in one SSE body sent whole;
- relay: buffered, handshake era: a call that may ask its client runs in the task worker and its stream is relayed
  from the store (`HandshakeTransport.relay`); any other call is collected.
"""


def era_of(body: Any, headers: Headers) -> Era:
    """The era of a decoded POST body."""
    if is_rest_call(body):
        return "rest"
    if request_meta_version(body) is not None or headers.get("mcp-protocol-version") in versions.STATELESS_VERSIONS:
        return "2026-07-28"
    return "handshake"


def branch_for(era: Era, body: Any, *, buffered: bool, accepts_sse: bool) -> Branch:
    """The branch that answers `body` (see the module's table)."""
    if era == "rest" or not accepts_sse or not streamable(body):
        return "answer"
    sends_first = may_send_first(era, body)
    if not buffered:
        return "stream" if sends_first else "watch"
    if not sends_first:
        return "answer"
    return "relay" if era == "handshake" else "collect"


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
    if era != "2026-07-28" or not isinstance(body, dict) or body.get("method") == "subscriptions/listen":
        return True
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and ("progressToken" in meta or versions.LOG_LEVEL_META in meta)
