"""Clients that pin a protocol version before 2025-11-25 cannot take `stratus local`'s streaming containers.

Twenty anonymous clients each `initialize` with 2025-06-18 through the Function URL, open a GET stream and leave at
once. Their streams used to be held up to `STRATUS_MAX_STREAM_SECONDS` (840 s) after they left, so the first two took
both containers and the next client's `initialize` timed out. On Lambda such a stream is a poll: each ends at once,
nothing of theirs runs on, and a new client connects; together they bill at most what docs/deploy.md ("What it
costs") says a departed client bills: one poll each, here bounded by `POLL_BOUND_MS`.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, initialize, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
STREAMING = "stratus-local-StreamingFunction"
OLD = "2025-06-18"
CLIENTS = 20
POLL_BOUND_MS = 1000
"""The most one departed client's `initialize` and GET bill together here: a poll is a few milliseconds on Lambda;
the emulator's containers, two processes on a shared machine, are slower."""


@pytest.fixture(scope="module")
def stack() -> Any:
    with serving(TEMPLATE, containers=2) as aws:
        yield aws


def _billed_ms(aws: LocalAws) -> int:
    entry = aws.bill.summary().get(STREAMING)
    return int(entry["billedMs"]) if entry else 0


async def _open_and_leave(url: str) -> None:
    """`initialize` with 2025-06-18, then a GET stream left as soon as its headers arrive."""
    params = {"protocolVersion": OLD, "capabilities": {}, "clientInfo": {"name": "old-client", "version": "1"}}
    async with httpx.AsyncClient(timeout=20) as http:
        opened = await http.post(
            url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, headers=HEADERS
        )
        assert opened.status_code == 200, opened.text
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": OLD}
        async with http.stream("GET", url, headers={**HEADERS, **session}) as stream:
            assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")


async def test_twenty_departed_old_clients_leave_the_containers_free_and_bill_one_poll_each(stack: LocalAws) -> None:
    url = f"{stack.url('StreamingFunctionUrl')}/mcp"
    billed = _billed_ms(stack)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as clients:
            for _ in range(CLIENTS):
                clients.start_soon(_open_and_leave, url)
    with anyio.fail_after(5):
        while stack.pools[STREAMING].busy:  # noqa: ASYNC110 - the emulator's count of running invocations
            await anyio.sleep(0.01)
    spent = _billed_ms(stack) - billed
    async with httpx.AsyncClient(timeout=10) as http:
        with anyio.fail_after(10):  # a new client connects at once
            assert await initialize(http, url)
    assert spent <= CLIENTS * POLL_BOUND_MS, f"{CLIENTS} departed clients billed {spent} ms"
