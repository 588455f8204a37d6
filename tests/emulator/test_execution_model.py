"""Lambda's execution model under the emulated front doors: several containers per function, one invocation at a
time each, started on demand, frozen between invocations, retired at random; state shared through the real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from stratus.emulator.containers import FunctionPool
from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, VERSION, call_tool, initialize, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
BUFFERED = "stratus-local-BufferedFunction"
STREAMING = "stratus-local-StreamingFunction"
TASK_WORKER = "stratus-local-TaskWorkerFunction"
WAIT_SECONDS = 20


@pytest.fixture(scope="module")
def two_containers() -> Iterator[LocalAws]:
    with serving(TEMPLATE, containers=2, seed=11) as aws:
        yield aws


@pytest.fixture(scope="module")
def one_container() -> Iterator[LocalAws]:
    with serving(TEMPLATE, containers=1) as aws:
        yield aws


async def _until(condition: Callable[[], bool]) -> None:
    """Waits (bounded) for the emulator's own bookkeeping, which runs on its thread."""
    with anyio.fail_after(WAIT_SECONDS):
        while not condition():  # noqa: ASYNC110 - another thread's state, bounded by fail_after
            await anyio.sleep(0.01)


def _running(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _state(pid: int) -> str:
    """The process state letter from /proc (T: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize(
    ("door", "function", "tool", "progress"),
    [("ServerlessHttpApi", BUFFERED, "whoami", False), ("StreamingFunctionUrl", STREAMING, "count_to_three", True)],
)
async def test_an_mcp_session_is_served_by_two_containers_in_turn(
    two_containers: LocalAws, door: str, function: str, tool: str, progress: bool, tmp_path: Path
) -> None:
    """While one container is busy the next call cold-starts a second; then both warm containers serve the one
    session (its state in Redis), which one serves a call is the emulator's (seeded) choice, as it is Lambda's."""
    url = f"{two_containers.url(door)}/mcp"
    pool: FunctionPool = two_containers.pools[function]
    gate = tmp_path / "gate"
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            session = await initialize(http, url)
            before = len(pool.served)
            held = asyncio.ensure_future(call_tool(http, url, session, "hold_until", {"path": str(gate)}))
            await _until(lambda: len(pool.served) > before)  # the held call has its container
            second, _ = await call_tool(http, url, session, "whoami", {})
            gate.touch()
            first, _ = await held
            assert first != second
            served: list[int] = []
            for _ in range(6):
                pid, response = await call_tool(http, url, session, tool, {}, progress=progress)
                served.append(pid)
                expected = "text/event-stream" if progress else "application/json"
                assert response.headers["content-type"].startswith(expected)
    assert set(served) == {first, second}
    assert pool.cold_starts == 2
    assert set(pool.served) == {first, second}


async def test_a_frozen_container_runs_nothing_between_invocations(one_container: LocalAws, tmp_path: Path) -> None:
    """A background task started in an invocation of the streaming function (uvicorn's loop runs on in the
    container) ticks only while the container is invoked: not while another function's container ticks, frozen,
    and again once invoked."""
    frozen_ticks, clock = tmp_path / "frozen", tmp_path / "clock"
    streaming = f"{one_container.url('StreamingFunctionUrl')}/mcp"
    buffered = f"{one_container.url('ServerlessHttpApi')}/mcp"
    pool = one_container.pools[STREAMING]
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            streaming_session = await initialize(http, streaming)
            buffered_session = await initialize(http, buffered)
            ticked, _ = await call_tool(
                http, streaming, streaming_session, "start_ticker", {"path": str(frozen_ticks), "ticks": 5}
            )
            assert ticked >= 5  # the task runs while its container is invoked
            await _until(lambda: pool.idle_pids() != [])
            (pid,) = pool.idle_pids()
            assert _state(pid) == "T"
            at_freeze = len(frozen_ticks.read_text())
            # Another container ticks 30 times (about 300 ms): the frozen one would have ticked as often.
            clock_ticks, _ = await call_tool(
                http, buffered, buffered_session, "start_ticker", {"path": str(clock), "ticks": 30}
            )
            assert clock_ticks >= 30
            assert len(frozen_ticks.read_text()) == at_freeze
            resumed, _ = await call_tool(
                http, streaming, streaming_session, "ticks_past", {"path": str(frozen_ticks), "count": at_freeze}
            )
    assert resumed > at_freeze  # invoked again, the container runs its task again
    assert pool.served[-1] == pid and pool.cold_starts == 1


async def test_retired_containers_are_replaced_by_cold_starts_and_the_session_lives_on() -> None:
    with serving(TEMPLATE, containers=2, retire_rate=1.0) as aws:
        url = f"{aws.url('ServerlessHttpApi')}/mcp"
        with anyio.fail_after(WAIT_SECONDS):
            async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
                session = await initialize(http, url)
                pids = [(await call_tool(http, url, session, "whoami", {}))[0] for _ in range(3)]
        pool = aws.pools[BUFFERED]
        assert len(set(pids)) == 3 and pool.cold_starts == 4
        assert not any(_running(pid) for pid in pids)  # each killed once its invocation ended


async def test_a_task_runs_in_a_container_of_the_task_worker(two_containers: LocalAws) -> None:
    """The buffered function hands the task to the worker function through Lambda's Invoke API (asynchronous), so
    it runs in a container of its own: the caller's is frozen once it has answered."""
    url = f"{two_containers.url('ServerlessHttpApi')}/mcp"
    headers = {**HEADERS, "mcp-protocol-version": VERSION}
    with anyio.fail_after(WAIT_SECONDS):
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
            headers["mcp-session-id"] = await initialize(http, url)
            call = {"name": "where", "arguments": {}, "task": {}}
            created = await http.post(
                url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, headers=headers
            )
            task_id = created.json()["result"]["task"]["taskId"]
            result = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": task_id}},
                headers=headers,
            )
    pid = result.json()["result"]["structuredContent"]["result"]
    assert two_containers.pools[TASK_WORKER].served == [pid]
    assert pid not in two_containers.pools[BUFFERED].served
