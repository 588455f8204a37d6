"""Compose middleware around a terminal step, outermost first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stratus.server.context import Context
from stratus.server.policy import CallNext, Middleware


def chain(middleware: Sequence[Middleware], terminal: CallNext) -> CallNext:
    """`middleware[0]` runs first and calls the next; the last one calls `terminal`."""
    call_next = terminal
    for layer in reversed(middleware):
        call_next = _bind(layer, call_next)
    return call_next


def _bind(layer: Middleware, call_next: CallNext) -> CallNext:
    async def step(context: Context) -> Any:
        return await layer(context, call_next)

    return step
