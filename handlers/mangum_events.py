"""The Lambda events of every front door but payload 2.0 (the REST API, an HTTP API on payload 1.0, ALB,
Lambda@Edge), read and answered by Mangum's event handlers with Mangum's defaults: no base path to strip (the app
sees the path the front door gives it), Mangum's text types."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from mangum.adapter import DEFAULT_TEXT_MIME_TYPES, HANDLERS
from mangum.handlers import HTTPGateway
from mangum.types import LambdaConfig, LambdaHandler

from stratus.transport.asgi import Scope

CONFIG = LambdaConfig(api_gateway_base_path="/", text_mime_types=[*DEFAULT_TEXT_MIME_TYPES], exclude_headers=[])


class _HttpApi(HTTPGateway):
    """HTTP API events on payload 1.0, the scope built once (Mangum's `__call__` reads it again for the payload
    version)."""

    @cached_property
    def scope(self) -> Scope:
        return super().scope


_SHAPES: tuple[type[LambdaHandler], ...] = tuple(_HttpApi if shape is HTTPGateway else shape for shape in HANDLERS)


def reader(event: dict[str, Any], context: Any) -> LambdaHandler:
    """Mangum's handler for the event's front door; RuntimeError when the event comes from none."""
    if event.get("headers", {}) is None:  # "headers": null (console tests, some clients); Mangum expects a map
        event = {**event, "headers": {}}
    for shape in _SHAPES:
        if shape.infer(event, context, CONFIG):
            return shape(event, context, CONFIG)
    raise RuntimeError("not an event from API Gateway, a Function URL or ALB")
