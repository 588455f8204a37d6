"""Each front door's Lambda event read as one ASGI request, and the app's answer written as that door expects.

One module per event shape, each with `infer(event, context)` and a `Reader(event, context)` giving the scope, the
body and, called with the app's response, the answer. The first module whose `infer` accepts the event reads it, in
Mangum's order. `http_api` (payload 2.0: the HTTP API and Function URLs, the buffered function's own doors) is
Stratus's own reading and is asked first; `alb`, `http_api_v1`, `rest_api` and `lambda_edge` wrap Mangum's event
handlers and are imported when an event that is not payload 2.0 first arrives, so the buffered function's cold start
never loads Mangum.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Any, Protocol

from stratus.handlers.front_doors import http_api
from stratus.types import Scope

LATER = ("alb", "http_api_v1", "rest_api", "lambda_edge")
"""The other doors' modules, in the order Mangum asks its handlers."""


class Reader(Protocol):
    """One event read as an ASGI request, and the app's buffered response written as the door's answer."""

    @property
    def scope(self) -> Scope: ...

    @property
    def body(self) -> bytes: ...

    def __call__(self, response: Any) -> dict[str, Any]: ...


_later: list[ModuleType] = []


def reader_for(event: dict[str, Any], context: Any) -> Reader:
    """The reader of the door that sent `event`; RuntimeError when no front door sent it."""
    if http_api.infer(event, context):
        return http_api.Reader(event, context)
    if not _later:
        _later.extend(import_module(f"{__name__}.{name}") for name in LATER)
    if event.get("headers", {}) is None:  # "headers": null (console tests, some clients); Mangum expects a map
        event = {**event, "headers": {}}
    for door in _later:
        if door.infer(event, context):
            reader: Reader = door.Reader(event, context)
            return reader
    raise RuntimeError("not an event from API Gateway, a Function URL or ALB")
