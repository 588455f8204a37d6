"""A task's steps (`ctx.step`): each named step's JSON result is kept in the store, so a later run of the same task
(after its client answered a question, or a launch delivered again) returns it without running the step again.

A task runs its tool from the start each time it resumes, as a 2026-07-28 multi round-trip retry does; what a step
did is not done twice. The results live in the shared store beside the task's answers, for as long as the task does,
so any container, the task worker and the durable worker see the same steps.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stratus.errors import McpError

if TYPE_CHECKING:
    from stratus.stores.base import CacheStore

STEP_RESULT_BYTES = 256 * 1024
"""The largest step result kept: what a Lambda durable function checkpoints of a step's result, so that a tool
written with steps runs unchanged in the durable worker."""


class StepError(McpError):
    """A step cannot be kept as written: a name used twice in one run, or a result that is not JSON or too large.
    The client sees the message (it names the step and what to change), as the tool's author must."""

    code = -32603


def step_key(task_id: str, name: str) -> str:
    return f"task-step:{task_id}:{name}"


class StepJournal:
    """The steps of one run of one task, kept in `cache` until the task expires."""

    def __init__(self, cache: CacheStore, task_id: str, ttl_seconds: float) -> None:
        self.cache = cache
        self.task_id = task_id
        self.ttl_seconds = ttl_seconds
        self._named: set[str] = set()

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
        text = _json_text(name, await run_step(fn, args, kwargs))
        await self.cache.set(key, text, self.ttl_seconds)
        return json.loads(text)


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
