"""Application Load Balancer events (multi-value headers or not), read and answered by Mangum's `ALB`."""

from __future__ import annotations

from typing import Any

from mangum.handlers import ALB

from stratus.handlers.front_doors.mangum_config import CONFIG


def infer(event: dict[str, Any], context: Any) -> bool:
    return ALB.infer(event, context, CONFIG)


class Reader(ALB):
    def __init__(self, event: dict[str, Any], context: Any) -> None:
        super().__init__(event, context, CONFIG)
