"""What an invocation sees of asyncio on `ContainerLoop`, checked against a plain loop's `run_until_complete`.

`ContainerLoop` reads asyncio's private state (`_ready`, `_scheduled`, `_timer_cancelled_count`, the async generator
hooks, `asyncio._set_running_loop`), which any CPython release may change. Each check runs one invocation on it and
on a plain event loop, and requires the same trace from both, and the trace it names. Standard library only: tests
run the checks in this interpreter, and as a script under each supported CPython (`python -I
container_loop_checks.py ROOT`), where `ContainerLoop` is imported from ROOT's handlers/invocation.py without the
package's dependencies.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import sys
import types
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

Scenario = Callable[[list[str]], Coroutine[Any, Any, None]]
LoopFactory = Callable[[], asyncio.AbstractEventLoop]

OUTSIDE = "outside: running False, loop none, hooks restored True"
"""What each check sees once the invocation returned: no loop running, and the async generator hooks as before."""

marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="outside")


def traced(
    make_loop: LoopFactory,
    scenario: Scenario,
    *,
    after: Scenario | None = None,
    observe: Callable[[Any], str] | None = None,
) -> list[str]:
    """What `scenario` (then `after`, on the same loop) recorded, run as the container runs an invocation: on the
    loop's `run_invocation` where it has one, else `run_until_complete`; `observe` reads the loop in between."""
    trace: list[str] = []
    hooks = sys.get_asyncgen_hooks()
    loop = make_loop()
    asyncio.set_event_loop(loop)
    try:
        run = getattr(loop, "run_invocation", loop.run_until_complete)
        try:
            run(scenario(trace))
        except Exception as error:  # what the invocation raised is part of the trace
            trace.append(f"raised {type(error).__name__}")
        restored = sys.get_asyncgen_hooks() == hooks
        trace.append(f"outside: running {loop.is_running()}, loop {_running_loop()}, hooks restored {restored}")
        trace.append(f"outside: marker {marker.get()}")
        if observe is not None:
            trace.append(observe(loop))
        if after is not None:
            loop.run_until_complete(after(trace))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    return trace


def _running_loop() -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "none"
    return "set"


def same_as_run_until_complete(container_loop: LoopFactory, scenario: Scenario, **options: Any) -> list[str]:
    """The trace of `scenario` on `container_loop`, which must be the plain loop's."""
    ours = traced(container_loop, scenario, **options)
    plain = traced(asyncio.SelectorEventLoop, scenario, **options)
    assert ours == plain, f"ContainerLoop: {ours}\nrun_until_complete: {plain}"
    return ours


def an_invocation_that_never_waits_sees_a_running_loop_its_task_and_its_own_context(loop: LoopFactory) -> None:
    async def invocation(trace: list[str]) -> None:
        running = asyncio.get_running_loop()
        trace.append(f"running loop is the event loop: {running is asyncio.get_event_loop()}")
        trace.append(f"is_running: {running.is_running()}")
        trace.append(f"current task: {type(asyncio.current_task()).__name__}")
        marker.set("inside")

    trace = same_as_run_until_complete(loop, invocation)
    assert trace == [
        "running loop is the event loop: True",
        "is_running: True",
        "current task: Task",
        OUTSIDE,
        "outside: marker outside",
    ], trace


def an_invocation_that_waits_is_finished_on_the_loop(loop: LoopFactory) -> None:
    async def invocation(trace: list[str]) -> None:
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, "resolved")
        trace.append(await future)
        await asyncio.sleep(0)
        trace.append("after a turn")

    trace = same_as_run_until_complete(loop, invocation)
    assert trace[:2] == ["resolved", "after a turn"], trace


def what_the_invocation_scheduled_runs_before_it_returns(loop: LoopFactory) -> None:
    async def background(trace: list[str]) -> None:
        trace.append("task started")

    async def invocation(trace: list[str]) -> None:
        asyncio.get_running_loop().call_soon(trace.append, "callback")
        asyncio.get_running_loop().create_task(background(trace))

    trace = same_as_run_until_complete(loop, invocation)
    assert trace[:2] == ["callback", "task started"], trace


def a_timer_due_runs_before_it_returns(loop: LoopFactory) -> None:
    async def invocation(trace: list[str]) -> None:
        asyncio.get_running_loop().call_later(0, trace.append, "due timer")

    trace = same_as_run_until_complete(loop, invocation)
    assert trace[0] == "due timer", trace


def a_cancelled_timer_is_cleared_away_before_it_returns(loop: LoopFactory) -> None:
    async def invocation(trace: list[str]) -> None:
        asyncio.get_running_loop().call_later(3600, trace.append, "later timer").cancel()

    def timers_left(loop: Any) -> str:
        return f"timers left: {len(loop._scheduled)}"

    trace = same_as_run_until_complete(loop, invocation, observe=timers_left)
    assert trace[-1] == "timers left: 0", trace


def an_async_generator_left_open_is_finalised_by_the_loop(loop: LoopFactory) -> None:
    async def numbers(trace: list[str]) -> Any:
        try:
            yield 1
            yield 2
        finally:
            trace.append("generator finalised")

    async def invocation(trace: list[str]) -> None:
        hooks = sys.get_asyncgen_hooks()
        trace.append(f"loop's hooks set: {hooks.finalizer is not None}")
        generator = numbers(trace)
        trace.append(f"first: {await generator.__anext__()}")

    async def after(trace: list[str]) -> None:
        await asyncio.sleep(0)

    trace = same_as_run_until_complete(loop, invocation, after=after)
    assert trace[:3] == ["loop's hooks set: True", "first: 1", OUTSIDE], trace
    assert trace.count("generator finalised") == 1, trace


def a_timeout_inside_the_invocation_holds_and_expires(loop: LoopFactory) -> None:
    async def invocation(trace: list[str]) -> None:
        async with asyncio.timeout(3600):
            await asyncio.sleep(0)
            trace.append("inside a timeout")
        try:
            async with asyncio.timeout(0):
                await asyncio.sleep(3600)
        except TimeoutError:
            trace.append("timed out")

    trace = same_as_run_until_complete(loop, invocation)
    assert trace[:2] == ["inside a timeout", "timed out"], trace


def a_task_group_runs_its_tasks_and_raises_their_errors(loop: LoopFactory) -> None:
    async def child(trace: list[str], name: str) -> None:
        await asyncio.sleep(0)
        trace.append(name)

    async def failing() -> None:
        raise ValueError("child failed")

    async def invocation(trace: list[str]) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(child(trace, "first child"))
            group.create_task(child(trace, "second child"))
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(failing())
        except* ValueError:
            trace.append("group raised ValueError")

    trace = same_as_run_until_complete(loop, invocation)
    assert trace[:3] == ["first child", "second child", "group raised ValueError"], trace


def an_invocation_error_is_raised_and_the_loop_serves_the_next(loop: LoopFactory) -> None:
    async def invocation(trace: list[str]) -> None:
        raise ValueError("the invocation failed")

    async def after(trace: list[str]) -> None:
        await asyncio.sleep(0)
        trace.append("next served")

    trace = same_as_run_until_complete(loop, invocation, after=after)
    assert trace == ["raised ValueError", OUTSIDE, "outside: marker outside", "next served"], trace


def an_invocation_that_never_waits_runs_before_the_loop_turns_on_312_and_later(loop: LoopFactory) -> None:
    async def invocation(trace: list[str]) -> None:
        trace.append("invocation")

    def waiting_first(trace: list[str]) -> Coroutine[Any, Any, None]:
        asyncio.get_event_loop().call_soon(trace.append, "waiting callback")
        return invocation(trace)

    trace = traced(loop, waiting_first)
    eager = ["invocation", "waiting callback"]  # started at once; the loop then turned for the callback
    assert trace[:2] == (eager if sys.version_info >= (3, 12) else eager[::-1]), trace


CHECKS: tuple[Callable[[LoopFactory], None], ...] = (
    an_invocation_that_never_waits_sees_a_running_loop_its_task_and_its_own_context,
    an_invocation_that_waits_is_finished_on_the_loop,
    what_the_invocation_scheduled_runs_before_it_returns,
    a_timer_due_runs_before_it_returns,
    a_cancelled_timer_is_cleared_away_before_it_returns,
    an_async_generator_left_open_is_finalised_by_the_loop,
    a_timeout_inside_the_invocation_holds_and_expires,
    a_task_group_runs_its_tasks_and_raises_their_errors,
    an_invocation_error_is_raised_and_the_loop_serves_the_next,
    an_invocation_that_never_waits_runs_before_the_loop_turns_on_312_and_later,
)


def container_loop_from(root: Path) -> tuple[LoopFactory, str]:
    """`ContainerLoop` from `root`'s handlers/invocation.py, and that module's file. `stratus` and
    `stratus.handlers` stand as bare packages over core/ and handlers/ (their `__init__` not run), so only the
    modules invocation.py imports are loaded, and none of the package's dependencies is needed."""
    for name, folder in (("stratus", root / "core"), ("stratus.handlers", root / "handlers")):
        package = types.ModuleType(name)
        package.__path__ = [str(folder)]
        sys.modules[name] = package
    module = importlib.import_module("stratus.handlers.invocation")
    return module.ContainerLoop, str(module.__file__)


def main(root: str) -> None:
    """Run every check under this interpreter; print its release, the module checked, then each check's name."""
    container_loop, module_file = container_loop_from(Path(root))
    sys.stdout.write(f"python {sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}\n")
    sys.stdout.write(f"module {module_file}\n")
    for check in CHECKS:
        check(container_loop)
        sys.stdout.write(f"passed {check.__name__}\n")


if __name__ == "__main__":
    main(sys.argv[1])
