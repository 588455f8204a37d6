"""The endpoint's one decision per POST: era x mode x streamable x session header -> the branch that answers it."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.transport.branches import Branch, Era, branch_for, era_of
from tests.fixtures.wire import STATELESS, stateless_meta

SESSION = {"mcp-session-id": "a-session"}


def _call(meta: dict[str, Any] | None = None, method: str = "tools/call") -> dict[str, Any]:
    params: dict[str, Any] = {"name": "ask_user", "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


HANDSHAKE_CALL = _call({"progressToken": "p"})
STATELESS_CALL = _call(stateless_meta(progressToken="p"))
STATELESS_SILENT = _call(stateless_meta())
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
BATCH = [HANDSHAKE_CALL]
REST_CALL = {"sessionId": "s", "method": "tools/call", "params": {}}

TABLE: list[tuple[str, Any, dict[str, str], bool, Era, Branch]] = [
    # name, body, headers, buffered -> era, branch
    ("handshake call, live", HANDSHAKE_CALL, SESSION, False, "handshake", "stream"),
    ("handshake call, buffered", HANDSHAKE_CALL, SESSION, True, "handshake", "relay"),
    ("2026-07-28 call with progress, live", STATELESS_CALL, {}, False, "2026-07-28", "stream"),
    ("2026-07-28 call with progress, buffered", STATELESS_CALL, {}, True, "2026-07-28", "collect"),
    # The bug of issue 44: a session header must not turn a 2026-07-28 call into a handshake-era relay.
    (
        "2026-07-28 call with progress and a session, buffered",
        STATELESS_CALL,
        SESSION,
        True,
        "2026-07-28",
        "collect",
    ),
    ("2026-07-28 call with progress and a session, live", STATELESS_CALL, SESSION, False, "2026-07-28", "stream"),
    (
        "2026-07-28 header, no _meta, buffered",
        HANDSHAKE_CALL,
        {"mcp-protocol-version": STATELESS, **SESSION},
        True,
        "2026-07-28",
        "collect",
    ),
    ("silent 2026-07-28 call, live", STATELESS_SILENT, {}, False, "2026-07-28", "watch"),
    ("silent 2026-07-28 call, buffered", STATELESS_SILENT, SESSION, True, "2026-07-28", "answer"),
    (
        "2026-07-28 listen, buffered",
        _call(stateless_meta(), "subscriptions/listen"),
        {},
        True,
        "2026-07-28",
        "collect",
    ),
    ("initialize, live", INITIALIZE, {}, False, "handshake", "answer"),
    ("initialize, buffered", INITIALIZE, {}, True, "handshake", "answer"),
    ("batch, live", BATCH, SESSION, False, "handshake", "answer"),
    ("batch, buffered", BATCH, SESSION, True, "handshake", "answer"),
    ("REST call, live", REST_CALL, {}, False, "rest", "answer"),
    ("REST call, buffered", REST_CALL, {}, True, "rest", "answer"),
]


@pytest.mark.parametrize(
    ("body", "headers", "buffered", "era", "branch"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE]
)
def test_each_post_is_answered_by_the_branch_its_era_and_mode_choose(
    body: Any, headers: dict[str, str], buffered: bool, era: Era, branch: Branch
) -> None:
    assert era_of(body, headers) == era
    assert branch_for(era, body, buffered=buffered, accepts_sse=True) == branch


@pytest.mark.parametrize("body", [HANDSHAKE_CALL, STATELESS_CALL, STATELESS_SILENT])
@pytest.mark.parametrize("buffered", [False, True])
def test_a_client_that_does_not_accept_sse_gets_plain_json_in_every_mode(body: Any, buffered: bool) -> None:
    assert branch_for(era_of(body, {}), body, buffered=buffered, accepts_sse=False) == "answer"


def test_only_the_handshake_era_is_ever_relayed() -> None:
    bodies = [row[1] for row in TABLE]
    relayed = {
        era_of(body, headers)
        for body in bodies
        for headers in ({}, SESSION, {"mcp-protocol-version": STATELESS})
        if branch_for(era_of(body, headers), body, buffered=True, accepts_sse=True) == "relay"
    }
    assert relayed == {"handshake"}
