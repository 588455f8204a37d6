"""The gateway's events, each told to its listeners and to the `stratus.gateway` logger.

Events: `server:connected`, `connection:state`, `servers:changed`, `list:changed`, `resource:updated` and
`tool:called` (with duration and success); each carries a small JSON object of fields, logged as `gateway_{field}`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from stratus.gateway.connection import ConnectionState
from stratus.types import JsonObject

logger = logging.getLogger("stratus.gateway")

EventListener = Callable[[str, JsonObject], None]


class GatewayEvents:
    """The listeners of one gateway, and the one way its events are told."""

    def __init__(self) -> None:
        self.listeners: list[EventListener] = []

    def emit(self, event: str, fields: JsonObject, *, level: int = logging.INFO) -> None:
        if logger.isEnabledFor(level):
            extra = {"gateway_event": event, **{f"gateway_{key}": value for key, value in fields.items()}}
            logger.log(level, event, extra=extra)
        for listener in self.listeners:
            listener(event, fields)

    def state_changed(self, upstream: str, old: ConnectionState, new: ConnectionState) -> None:
        """An upstream's connection moved (the pool's `on_state`)."""
        self.emit("connection:state", {"upstream": upstream, "from": old.value, "to": new.value})
        if new is ConnectionState.CONNECTED:
            self.emit("server:connected", {"upstream": upstream})
