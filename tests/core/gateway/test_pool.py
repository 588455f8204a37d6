"""The container's upstream connections against a real Stratus upstream on 127.0.0.1: made once on first use
(concurrent first calls share the handshake), checked after idling, given up on after the maximum attempts with
the backoff in between, and closed only once the calls in flight are done."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import anyio
import pytest

from stratus import Context, McpServer, Settings, build_app
from stratus.gateway.config import Upstream
from stratus.gateway.connection import ConnectionState, StateListener
from stratus.gateway.pool import UpstreamPool
from stratus.gateway.upstream_client import UpstreamUnavailableError
from tests.fixtures.clocks import FakeClock
from tests.fixtures.processes import free_port
from tests.fixtures.servers import uvicorn_serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
released = threading.Event()
upstream_server = McpServer("pooled")


@upstream_server.tool(timeout=20)
async def slow(ctx: Context) -> str:
    """Answers once the test releases it."""
    await anyio.to_thread.run_sync(released.wait, 15)
    return "done"


@pytest.fixture(scope="module")
def upstream_url() -> Iterator[str]:
    with uvicorn_serving(build_app(upstream_server, Settings())) as url:
        yield f"{url}/mcp"


def recorder() -> tuple[list[tuple[str, str]], StateListener]:
    moves: list[tuple[str, str]] = []
    return moves, lambda name, old, new: moves.append((old.value, new.value))


async def test_concurrent_first_calls_share_one_connection(upstream_url: str) -> None:
    moves, listen = recorder()
    pool = UpstreamPool([Upstream(name="up", transport="http", url=upstream_url)], on_state=listen)
    clients = await asyncio.gather(*(pool.client("up") for _ in range(5)))
    assert all(client is clients[0] for client in clients)
    assert moves == [("disconnected", "connecting"), ("connecting", "connected")]
    await pool.aclose()


async def test_an_idle_connection_is_checked_before_reuse_and_a_dead_upstream_backs_off_until_it_gives_up() -> None:
    clock = FakeClock()
    moves, listen = recorder()
    port = free_port()
    upstream = Upstream(name="up", transport="http", url=f"http://127.0.0.1:{port}/mcp")
    pool = UpstreamPool([upstream], clock=clock, check_after=30, max_attempts=3, on_state=listen)
    with pytest.raises(UpstreamUnavailableError, match="up did not answer"):
        await pool.client("up")  # nothing listens on the port: the first attempt fails
    with pytest.raises(UpstreamUnavailableError, match=r"next connection attempt in 1\.0 s"):
        await pool.client("up")  # within the backoff: no attempt made
    clock.advance(1)
    with pytest.raises(UpstreamUnavailableError, match="up did not answer"):
        await pool.client("up")  # the second attempt
    with pytest.raises(UpstreamUnavailableError, match=r"next connection attempt in 2\.0 s"):
        await pool.client("up")
    clock.advance(2)
    with pytest.raises(UpstreamUnavailableError, match="up did not answer"):
        await pool.client("up")  # the third and last
    clock.advance(3600)
    with pytest.raises(UpstreamUnavailableError, match="failed 3 connection attempts in a row"):
        await pool.client("up")
    assert pool.state("up") is ConnectionState.ERROR
    assert (
        moves
        == [("disconnected", "connecting"), ("connecting", "error")]
        + [
            ("error", "connecting"),
            ("connecting", "error"),
        ]
        * 2
    )
    await pool.aclose()


async def test_a_connection_idle_past_the_check_is_health_checked_and_kept_when_it_answers(upstream_url: str) -> None:
    clock = FakeClock()
    moves, listen = recorder()
    pool = UpstreamPool(
        [Upstream(name="up", transport="http", url=upstream_url)],
        clock=clock,
        check_after=30,
        on_state=listen,
    )
    first = await pool.client("up")
    clock.advance(31)
    assert await pool.client("up") is first  # checked with tools/list, and kept
    pool.failed("up")
    assert await pool.client("up") is first  # a failure is checked at once; it answers, so it stays
    assert moves == [("disconnected", "connecting"), ("connecting", "connected")]
    await pool.aclose()


async def test_closing_waits_for_the_calls_in_flight(upstream_url: str) -> None:
    released.clear()
    pool = UpstreamPool([Upstream(name="up", transport="http", url=upstream_url)])
    client = await pool.client("up")

    async def call() -> str:
        async with pool.in_flight():
            result = await client.call_tool("slow", {})
            return str(result["content"][0]["text"])

    with anyio.fail_after(15):
        running = asyncio.ensure_future(call())
        await asyncio.sleep(0)  # let the call start and count itself in flight
        closing = asyncio.ensure_future(pool.aclose(within=10))
        done, _ = await asyncio.wait({closing}, timeout=0.3)
        assert not done  # still waiting for the call
        released.set()
        assert await running == "done"  # the call finished on its connection
        await closing
    assert pool.state("up") is ConnectionState.DISCONNECTED
