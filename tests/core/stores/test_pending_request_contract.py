"""The contract of pending requests (a reply to a server-to-client request, delivered once to its waiter), for
every backend."""

from __future__ import annotations

import anyio
import pytest

from tests.fixtures.store_backends import Backend

pytestmark = pytest.mark.anyio


async def test_a_reply_delivered_once_reaches_the_waiter(backend: Backend) -> None:
    pending = backend.stores.pending
    await pending.open("session-1/req-9", ttl_seconds=30)
    assert await pending.deliver("session-1/req-9", '{"result": 1}') is True
    assert await pending.deliver("session-1/req-9", '{"result": 2}') is False  # the first reply wins
    with anyio.fail_after(5):
        assert await pending.wait("session-1/req-9", within=5) == '{"result": 1}'


async def test_a_reply_nobody_waits_for_is_refused(backend: Backend) -> None:
    assert await backend.stores.pending.deliver("session-1/never-sent", "{}") is False


async def test_a_waiter_is_woken_by_a_reply_sent_while_it_waits(backend: Backend) -> None:
    pending = backend.stores.pending
    await pending.open("r", ttl_seconds=30)
    replies: list[str | None] = []

    async def wait() -> None:
        replies.append(await pending.wait("r", within=5))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert await pending.deliver("r", "answer") is True
    assert replies == ["answer"]


async def test_waiting_for_a_reply_that_never_comes_ends_at_the_deadline(backend: Backend) -> None:
    await backend.stores.pending.open("silent", ttl_seconds=30)
    with anyio.fail_after(5):
        assert await backend.stores.pending.wait("silent", within=0.05) is None
