"""CloudFront Lambda@Edge events, read and answered by Mangum's `LambdaAtEdge`."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from mangum.handlers import LambdaAtEdge

from stratus.handlers.front_doors.mangum_config import CONFIG
from stratus.transport.asgi import buffered_scope
from stratus.types import Scope


def infer(event: dict[str, Any], context: Any) -> bool:
    return LambdaAtEdge.infer(event, context, CONFIG)


class Reader(LambdaAtEdge):
    def __init__(self, event: dict[str, Any], context: Any) -> None:
        super().__init__(event, context, CONFIG)

    @cached_property
    def scope(self) -> Scope:
        return buffered_scope(super().scope)
