"""The call gate's contract on every backend: a call refused for any reason spends nothing.

A refused call (no such session, another principal's session, one bucket empty, the circuit open) takes no token
from any bucket and no half-open trial from the breaker, so made-up or unauthorized requests cannot use up a
limit that real callers share, nor hold a breaker open.
"""

from __future__ import annotations

import pytest

from stratus.resilience.breaker import BreakerPolicy, CircuitState
from stratus.resilience.limiter import RateLimit
from stratus.stores.records import CallChecks, SessionRecord
from tests.fixtures.store_backends import Backend

pytestmark = pytest.mark.anyio

TWO = RateLimit(rate=0.001, burst=2)
POLICY = BreakerPolicy(failure_threshold=1, window_seconds=10.0, cooldown_seconds=5.0)
ALICE = "issuer|alice"


async def _session(backend: Backend, session_id: str = "s-1", principal: str | None = ALICE) -> None:
    await backend.stores.sessions.create(
        SessionRecord(session_id=session_id, protocol_version="2025-11-25", principal=principal)
    )


def _checks(session_id: str | None = "s-1", owner: str | None = ALICE) -> CallChecks:
    return CallChecks(
        session_id=session_id,
        owner=owner,
        limits=(("tool:t", TWO), ("overall", TWO)),
        breaker=("tool:t", POLICY),
    )


async def _tokens_left(backend: Backend, key: str) -> int:
    """Takes from `key` until refused; how many it could take."""
    taken = 0
    while taken < 10 and (await backend.stores.rate_limits.acquire(key, TWO)).allowed:
        taken += 1
    return taken


async def _open_then_cool(backend: Backend) -> None:
    await backend.stores.breakers.record("tool:t", POLICY, success=False)
    backend.clock.advance(POLICY.cooldown_seconds)


async def test_an_admitted_call_takes_one_token_from_each_bucket_and_touches_its_session(backend: Backend) -> None:
    await _session(backend)
    backend.clock.advance(100)  # less than the timeout left: DynamoDB slides the expiry (`TOUCH_SHARE`)
    admission = await backend.stores.gate.admit(_checks())
    assert admission.session is not None and admission.session.last_active_at == backend.clock.now
    assert [decision.allowed for decision in admission.decisions] == [True, True]
    assert admission.breaker is not None and admission.breaker.allowed
    assert await _tokens_left(backend, "tool:t") == 1
    assert await _tokens_left(backend, "overall") == 1


@pytest.mark.parametrize(("session_id", "owner"), [("made-up", ALICE), ("s-1", "issuer|mallory"), ("s-1", None)])
async def test_a_call_naming_no_session_of_its_caller_spends_nothing(
    backend: Backend, session_id: str, owner: str | None
) -> None:
    await _session(backend)
    await _open_then_cool(backend)
    for _ in range(5):
        admission = await backend.stores.gate.admit(_checks(session_id, owner))
        assert admission.session is None
    assert await _tokens_left(backend, "tool:t") == 2
    assert await _tokens_left(backend, "overall") == 2
    trial = await backend.stores.breakers.admit("tool:t", POLICY)
    assert (trial.allowed, trial.state) == (True, CircuitState.HALF_OPEN)


async def test_a_call_one_bucket_refuses_takes_nothing_from_the_others(backend: Backend) -> None:
    await _session(backend)
    assert await _tokens_left(backend, "overall") == 2  # the overall bucket is empty now
    for _ in range(3):
        admission = await backend.stores.gate.admit(_checks())
        assert [decision.allowed for decision in admission.decisions] == [True, False]
    assert await _tokens_left(backend, "tool:t") == 2


async def test_a_call_a_bucket_refuses_leaves_the_half_open_trial_to_others(backend: Backend) -> None:
    await _session(backend)
    await _open_then_cool(backend)
    assert await _tokens_left(backend, "overall") == 2
    await backend.stores.gate.admit(_checks())
    trial = await backend.stores.breakers.admit("tool:t", POLICY)
    assert (trial.allowed, trial.state) == (True, CircuitState.HALF_OPEN)


async def test_a_call_the_open_circuit_refuses_takes_no_token(backend: Backend) -> None:
    await _session(backend)
    await backend.stores.breakers.record("tool:t", POLICY, success=False)
    for _ in range(3):
        admission = await backend.stores.gate.admit(_checks())
        assert admission.breaker is not None and not admission.breaker.allowed
    assert await _tokens_left(backend, "tool:t") == 2
    assert await _tokens_left(backend, "overall") == 2


async def test_without_a_session_the_gate_takes_from_the_buckets_alone(backend: Backend) -> None:
    admission = await backend.stores.gate.admit(_checks(None, None))
    assert admission.session is None and [decision.allowed for decision in admission.decisions] == [True, True]
    assert await _tokens_left(backend, "tool:t") == 1
