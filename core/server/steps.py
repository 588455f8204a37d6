"""A task's steps (`ctx.step`): each named step's JSON result is kept in the store, so a later run of the same task
(after its client answered a question, or a launch delivered again) returns it without running the step again.

A task runs its tool from the start each time it resumes, as a 2026-07-28 multi round-trip retry does; what a step
did is not done twice. The results live in the shared store beside the task's answers, for as long as the task does,
so any container, the task worker and the durable worker see the same steps.

In the durable task worker a run may also end between two steps (`OutOfTime`) when the next one might not finish
within what is left of the invocation (the function's timeout, at most 15 minutes): the execution goes on in a new
invocation, where the run replays the steps already kept. The next step's length is guessed from the longest one the
task has taken so far (`STEP_MARGIN_SECONDS` more). A step that cannot finish even in a fresh invocation is cut at its
end, and the task fails with a message naming the limit (`overran`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stratus.errors import McpError
from stratus.request.inputs import OutOfTime

if TYPE_CHECKING:
    from stratus.stores.base import CacheStore

STEP_RESULT_BYTES = 256 * 1024
"""The largest step result kept: what a Lambda durable function checkpoints of a step's result, so that a tool
written with steps runs unchanged in the durable worker."""


STEP_MARGIN_SECONDS = 10.0
"""Added to the longest step taken so far when judging whether the next one fits in the invocation's time left: what
recording a step, and the run's own end, may take."""


class StepError(McpError):
    """A step cannot be kept as written: a name used twice in one run, or a result that is not JSON or too large.
    The client sees the message (it names the step and what to change), as the tool's author must."""

    code = -32603


def step_key(task_id: str, name: str) -> str:
    return f"task-step:{task_id}:{name}"


def longest_key(task_id: str) -> str:
    return f"task-steps-longest:{task_id}"


def logged_key(task_id: str) -> str:
    return f"task-steps-logged:{task_id}"


class StepJournal:
    """The steps of one run of one task, kept in `cache` until the task expires.

    `remaining`: the seconds left to this invocation, when the run may end between steps and go on in the next
    invocation (the durable task worker); None runs every step in this one.
    """

    def __init__(
        self,
        cache: CacheStore,
        task_id: str,
        ttl_seconds: float,
        *,
        remaining: Callable[[], float] | None = None,
    ) -> None:
        self.cache = cache
        self.task_id = task_id
        self.ttl_seconds = ttl_seconds
        self.remaining = remaining
        self.running: str | None = None
        """The step being run now, if any (a step cut by the invocation's end is named in the task's failure)."""
        self.ran = 0
        """Steps run (not replayed) in this invocation."""
        self._named: set[str] = set()
        self._longest: float | None = None
        self.logged = 0
        """The tool's log lines so far in this run (`Context.log`)."""
        self._logged_before: int | None = None

    async def step(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The step's result: recorded by an earlier run, or `fn(*args, **kwargs)` (awaited when it is a
        coroutine) run now and recorded, as JSON reads it back."""
        if name in self._named:
            raise StepError(f"Step {name!r} ran twice in one run of the task: give each step a name of its own")
        self._named.add(name)
        key = step_key(self.task_id, name)
        kept = await self.cache.get(key)
        if kept is not None:
            return json.loads(kept)
        if self.remaining is None:
            self.running = name
            text = _json_text(name, await run_step(fn, args, kwargs))
            self.running = None
            await self.cache.set(key, text, self.ttl_seconds)
            return json.loads(text)
        await self._fits_or_yield()
        self.running, left = name, self.remaining()
        text = _json_text(name, await run_step(fn, args, kwargs))
        taken = left - self.remaining()  # measured on the invocation's own clock
        self.running = None
        self.ran += 1
        await self.cache.set(key, text, self.ttl_seconds)
        if taken > (self._longest or 0.0):
            self._longest = taken
            await self.cache.set(longest_key(self.task_id), repr(taken), self.ttl_seconds)
        return json.loads(text)

    async def _fits_or_yield(self) -> None:
        """End the run here (`OutOfTime`) when a step ran in this invocation already and the next might not finish
        in what is left of it; the first step of an invocation always runs."""
        assert self.remaining is not None
        if self._longest is None:
            kept = await self.cache.get(longest_key(self.task_id))
            self._longest = float(kept) if kept is not None else 0.0
        if self.ran and self.remaining() < self._longest + STEP_MARGIN_SECONDS:
            raise OutOfTime(self.task_id)

    async def replayed_log(self) -> bool:
        """Count a log line of the tool; whether an earlier run of the task already wrote it (a run replays the
        tool from the top: its lines before the point the last run stopped at are not written twice). A line
        inside a step is not counted: a kept step does not run again, so its lines are written once anyway."""
        if self.running is not None:
            return False
        if self._logged_before is None:
            kept = await self.cache.get(logged_key(self.task_id))
            self._logged_before = int(kept) if kept is not None else 0
        self.logged += 1
        return self.logged <= self._logged_before

    async def keep_log_count(self) -> None:
        """The run stopped (a question, or the end of an invocation) and the next replays it: remember how many of
        its log lines it wrote."""
        if self.logged:
            await self.cache.set(logged_key(self.task_id), str(self.logged), self.ttl_seconds)

    def overran(self, limit_seconds: float) -> StepError | None:
        """The failure of a run cut by the invocation's end in the middle of a step (None when no step was running):
        it names the step and the limit it could not fit in."""
        if self.running is None:
            return None
        return StepError(
            f"Step {self.running!r} did not finish within the {limit_seconds:.0f} s one invocation of the durable "
            "task worker may run (its function's Timeout, which Lambda caps at 900 s): split it into steps that each "
            "finish well within it"
        )


async def run_step(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    value = fn(*args, **kwargs)
    return await value if inspect.isawaitable(value) else value


def _json_text(name: str, value: Any) -> str:
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        raise StepError(
            f"Step {name!r} returned {type(value).__name__}, which is not JSON: return a dict, list, str, number, "
            "bool or None (a replay reads the result back as JSON)"
        ) from None
    if len(text.encode()) > STEP_RESULT_BYTES:
        raise StepError(
            f"Step {name!r} returned {len(text.encode())} bytes of JSON, over the {STEP_RESULT_BYTES} a step may keep: "
            "keep large results in your own storage and return their key"
        )
    return text
