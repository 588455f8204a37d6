"""The context of the request being served, readable anywhere in its call stack."""

from __future__ import annotations

from contextvars import ContextVar, Token

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


class serving:  # noqa: N801 - used as a function: `with serving(context):`
    """Make `context` the current one for the duration of the block (a class: a generator-based context manager
    costs several times as much, on every call)."""

    __slots__ = ("_context", "_token")

    def __init__(self, context: Context) -> None:
        self._context = context
        self._token: Token[Context | None] | None = None

    def __enter__(self) -> None:
        self._token = _current.set(self._context)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _current.reset(self._token)
