"""The container's event loop runs each invocation as an eager task (CPython 3.12 and later): what the invocation
sees of asyncio, and what runs before `run_invocation` returns, is what `run_until_complete` gives it."""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Iterator

import pytest

from stratus.handlers.invocation import ContainerLoop

marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="outside")


@pytest.fixture
def loop() -> Iterator[ContainerLoop]:
    loop = ContainerLoop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()


def test_an_invocation_that_never_waits_sees_a_running_loop_its_task_and_its_own_context(loop: ContainerLoop) -> None:
    seen: dict[str, object] = {}

    async def invocation() -> None:
        seen["loop"] = asyncio.get_running_loop()
        seen["running"] = loop.is_running()
        seen["task"] = asyncio.current_task()
        async with asyncio.timeout(60), asyncio.TaskGroup() as group:
            group.create_task(asyncio.sleep(0))
        marker.set("inside")

    loop.run_invocation(invocation())
    assert seen["loop"] is loop and seen["running"] is True
    assert isinstance(seen["task"], asyncio.Task)
    assert marker.get() == "outside"  # the task ran in a copy of the context, as under run_until_complete
    assert not loop.is_running()
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()


def test_an_invocation_that_waits_is_finished_on_the_loop(loop: ContainerLoop) -> None:
    done: list[int] = []

    async def invocation() -> None:
        future = loop.create_future()
        loop.call_later(0.01, future.set_result, 3)
        done.append(await future)
        await asyncio.sleep(0)
        done.append(4)

    loop.run_invocation(invocation())
    assert done == [3, 4]


def test_what_the_invocation_scheduled_runs_before_it_returns_as_under_run_until_complete(loop: ContainerLoop) -> None:
    ran: list[str] = []

    async def background() -> None:
        ran.append("task started")

    async def invocation() -> None:
        loop.call_soon(ran.append, "callback")
        loop.create_task(background())

    loop.run_invocation(invocation())
    assert ran == ["callback", "task started"]


def test_an_invocation_error_is_raised_and_the_loop_serves_the_next(loop: ContainerLoop) -> None:
    async def failing() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        loop.run_invocation(failing())
    assert not loop.is_running()

    async def waiting() -> int:
        await asyncio.sleep(0)
        return 5

    assert loop.run_until_complete(waiting()) == 5


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks are CPython 3.12 and later")
def test_an_invocation_that_never_waits_runs_before_the_loop_turns(loop: ContainerLoop) -> None:
    order: list[str] = []
    loop.call_soon(order.append, "waiting callback")

    async def invocation() -> None:
        order.append("invocation")

    loop.run_invocation(invocation())
    assert order == ["invocation", "waiting callback"]  # started at once; the loop then turned for the callback
