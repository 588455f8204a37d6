"""The HTTP API's events on payload format 1.0, read and answered by Mangum's `HTTPGateway`, the scope built once
(Mangum's `__call__` reads it again for the payload version)."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from mangum.handlers import HTTPGateway

from stratus.handlers.front_doors.mangum_config import CONFIG
from stratus.transport.asgi import buffered_scope
from stratus.types import Scope


def infer(event: dict[str, Any], context: Any) -> bool:
    return HTTPGateway.infer(event, context, CONFIG)


class Reader(HTTPGateway):
    def __init__(self, event: dict[str, Any], context: Any) -> None:
        super().__init__(event, context, CONFIG)

    @cached_property
    def scope(self) -> Scope:
        return buffered_scope(super().scope)
