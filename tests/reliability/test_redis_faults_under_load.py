"""Redis stopped, paused and flushed while eight clients call a rate-limited tool through uvicorn: only 200, the
documented 503 (`Retry-After: 1`, -31502) and 404 for lost sessions; service back within a bound once the fault
ends; sessions kept or lost as docs/reliability.md says. The figures are logged: `-o log_cli=true
--log-cli-level=INFO` shows them.
"""

from __future__ import annotations

import logging

import pytest

from tests.fixtures.fault_load import CLIENTS, STORE_TIMEOUT, Fault, FaultRun, run_fault_under_load
from tests.fixtures.redis_server import OwnRedis

pytestmark = pytest.mark.anyio
# Redis answers nothing while paused, and ends the pause by itself: on Redis 7.0 a CLIENT UNPAUSE waits in a
# `CLIENT PAUSE ... ALL` like every other command.
SHORT_PAUSE = 0.2  # seconds: well under the store timeout
LONG_PAUSE = 3 * STORE_TIMEOUT
RECOVERY_BOUND = 5.0  # seconds from the fault's end until every client is served again


@pytest.fixture(autouse=True)
def quiet_http_client(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="httpx")  # a line per request would bury the figures


def assert_documented_and_recovered(run: FaultRun) -> None:
    assert set(run.statuses) <= {200, 404, 503}, run.statuses  # never another status
    assert run.undocumented_refusals == 0, run.statuses
    assert run.wrong_answers == 0, run.statuses  # a 200 is the tool's own answer
    assert run.slowest < 5 * STORE_TIMEOUT + 1, run.slowest  # no request hung
    assert run.all_recovered is not None, run.figures()
    assert run.all_recovered < RECOVERY_BOUND, run.figures()


async def test_a_redis_restart_under_load_costs_bounded_503s_and_every_session_once(own_redis: OwnRedis) -> None:
    stopped = Fault("Redis stopped, started again empty", OwnRedis.stop, OwnRedis.start, end_after_refusal=True)
    run = await run_fault_under_load(own_redis, stopped)
    assert_documented_and_recovered(run)
    assert run.statuses[503] > 0  # the outage was seen, and refused as documented
    assert run.statuses[404] == CLIENTS  # each client lost its session once and opened a new one
    assert run.sessions_kept == 0
    assert run.active_sessions == CLIENTS  # only the new sessions: nothing survived without persistence


async def test_a_pause_past_the_store_timeout_under_load_is_503s_and_keeps_every_session(
    own_redis: OwnRedis,
) -> None:
    paused = Fault(
        f"CLIENT PAUSE {LONG_PAUSE * 1000:.0f} ms",
        lambda redis: redis.client().client_pause(int(LONG_PAUSE * 1000), all=True),
        lasts=LONG_PAUSE,
    )
    run = await run_fault_under_load(own_redis, paused)
    assert_documented_and_recovered(run)
    assert run.statuses[503] > 0 and run.statuses[404] == 0
    assert run.sessions_kept == CLIENTS  # Redis kept everything; the clients go on in their sessions
    assert run.active_sessions == CLIENTS


async def test_a_pause_shorter_than_the_store_timeout_under_load_costs_latency_only(own_redis: OwnRedis) -> None:
    slowed = Fault(
        f"CLIENT PAUSE {SHORT_PAUSE * 1000:.0f} ms",
        lambda redis: redis.client().client_pause(int(SHORT_PAUSE * 1000), all=True),  # Redis ends it by itself
        lasts=SHORT_PAUSE,
    )
    run = await run_fault_under_load(own_redis, slowed)
    assert_documented_and_recovered(run)
    assert run.statuses.keys() == {200}, run.statuses  # every call waited and was answered
    assert run.slowest >= SHORT_PAUSE / 2, run.slowest  # the pause was felt
    assert run.sessions_kept == CLIENTS
    assert run.active_sessions == CLIENTS


async def test_a_flushall_under_load_loses_every_session_once_and_nothing_errors(own_redis: OwnRedis) -> None:
    flushed = Fault("FLUSHALL", lambda redis: redis.client().flushall())
    run = await run_fault_under_load(own_redis, flushed)
    assert_documented_and_recovered(run)
    assert run.statuses.keys() == {200, 404}, run.statuses  # Redis never stopped answering
    assert run.statuses[404] == CLIENTS
    assert run.sessions_kept == 0
    assert run.active_sessions == CLIENTS
