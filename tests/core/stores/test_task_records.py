"""The encoding of a task's and a relayed call's request and outcome: records written before a deploy read after it,
and records written after it read in a container still running the release before (a rolling deploy)."""

from __future__ import annotations

import json

from stratus.stores.task_records import (
    KeptPrincipal,
    RelayedCall,
    RpcError,
    TaskOutcome,
    TaskRequest,
    decode_outcome,
    decode_request,
    encode_outcome,
    encode_request,
)
from tests.fixtures.stored_tasks import STORED_CALL, STORED_FAILURE, STORED_QUESTIONS, STORED_TASK


def test_what_is_written_now_is_what_the_release_before_wrote_and_reads() -> None:
    for stored in (STORED_TASK, STORED_CALL):
        assert json.loads(encode_request(decode_request(stored))) == json.loads(stored)
    for stored in (STORED_QUESTIONS, STORED_FAILURE, '{"result": {"content": []}}', '{"statusMessage": "Cancelled"}'):
        assert json.loads(encode_outcome(decode_outcome(stored))) == json.loads(stored)


def test_a_task_stored_before_capabilities_and_quota_places_were_kept_reads_without_them() -> None:
    stored = '{"tool":"greet","arguments":{},"version":"2025-11-25","ttlMs":5000,"principal":null}'
    assert decode_request(stored) == TaskRequest(
        tool="greet", arguments={}, version="2025-11-25", principal=None, client_capabilities={}, ttl_ms=5000
    )


def test_requests_and_outcomes_read_back_as_written() -> None:
    principal = KeptPrincipal("alice", ("read",), (), None)
    requests: list[TaskRequest | RelayedCall] = [
        TaskRequest(tool="t", arguments={"a": [1]}, version="2026-07-28", principal=principal, client_capabilities={}),
        RelayedCall(tool="t", arguments={}, request_id="r-1", session_id="s", stream_token="k", principal=principal),
        RelayedCall(
            tool="t",
            arguments={},
            request_id=2,
            session_id="s",
            stream_token="k",
            principal=None,
            trace={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
        ),
    ]
    for request in requests:
        assert decode_request(encode_request(request)) == request
    outcomes = [
        TaskOutcome(result={"content": [], "isError": True}),
        TaskOutcome(error=RpcError(-32602, "Invalid params", {"field": "a"})),
        TaskOutcome(input_requests={"q": {"method": "roots/list"}}, asked=("p", "q")),
        TaskOutcome(),
    ]
    for outcome in outcomes:
        assert decode_outcome(encode_outcome(outcome)) == outcome
