"""Application Load Balancer events (multi-value headers or not), read and answered by Mangum's `ALB`."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from mangum.handlers import ALB

from stratus.handlers.front_doors.mangum_config import CONFIG
from stratus.transport.asgi import buffered_scope
from stratus.types import Scope


def infer(event: dict[str, Any], context: Any) -> bool:
    return ALB.infer(event, context, CONFIG)


class Reader(ALB):
    def __init__(self, event: dict[str, Any], context: Any) -> None:
        super().__init__(event, context, CONFIG)

    @cached_property
    def scope(self) -> Scope:
        return buffered_scope(super().scope)
