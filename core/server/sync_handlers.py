"""A plain `def` handler cannot await: one that calls the Context's async methods (`ctx.info(...)`) makes a coroutine
that never runs, so the client gets nothing and Python only warns "never awaited". Such a handler is refused when it
is registered, reading its source once (only sync handlers that take a Context pay for it)."""

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

from stratus.server.context import Context


def unawaited_context_calls(fn: Callable[..., Any], parameter: str) -> list[tuple[str, int]]:
    """Each `parameter.<async method>(...)` call in `fn`'s own body (not in functions it defines) with its line in
    the file; [] when the source cannot be read (a REPL, a function built at run time)."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return []
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:  # a lambda's line, or source that is not a whole statement
        return []
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef):
        return []
    asynchronous = {name for name, member in vars(Context).items() if inspect.iscoroutinefunction(member)}
    return [
        (node.func.attr, first_line + node.lineno - 1)
        for node in _own_nodes(definition)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == parameter
        and node.func.attr in asynchronous
    ]


def _own_nodes(definition: ast.FunctionDef) -> Iterator[ast.AST]:
    """Every node of the function's body, not descending into the functions and lambdas it defines (an inner
    `async def` may await the context)."""
    pending: list[ast.AST] = list(definition.body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
