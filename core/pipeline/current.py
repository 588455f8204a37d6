"""The context of the request being served, readable anywhere in its call stack."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from stratus.server.context import Context

_current: ContextVar[Context | None] = ContextVar("stratus_request_context", default=None)
lambda_request_id: ContextVar[str | None] = ContextVar("stratus_lambda_request_id", default=None)
"""The Lambda invocation being served (set by the Lambda handler; read by log correlation)."""


def current_context() -> Context:
    """The context of the call being served.

    Raises:
        LookupError: called outside a tool call, resource read or prompt get.
    """
    context = _current.get()
    if context is None:
        raise LookupError("no MCP request is being served here")
    return context


def peek_context() -> Context | None:
    """The context of the call being served, or None outside one (for loggers and other observers)."""
    return _current.get()


@contextmanager
def serving(context: Context) -> Iterator[None]:
    """Make `context` the current one for the duration of the block."""
    token = _current.set(context)
    try:
        yield
    finally:
        _current.reset(token)
