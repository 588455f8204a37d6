"""A plain `def` handler that calls the Context's async methods is refused when registered, naming the call and its
line, instead of sending nothing at run time with only a "never awaited" warning; one that reads the Context, or
awaits it inside a coroutine of its own, is served."""

from __future__ import annotations

import asyncio
import importlib
import inspect
from pathlib import Path

import pytest

from stratus import Context, McpServer
from stratus.server.signature import RegistrationError
from tests.fixtures.clients import McpFactory

pytestmark = pytest.mark.anyio


def test_a_sync_tool_that_calls_an_async_context_method_is_refused_at_registration() -> None:
    server = McpServer("sync", "1")

    def report(item: str, ctx: Context) -> str:
        ctx.info(f"reporting {item}")  # type: ignore[unused-coroutine]  # the mistake under test
        return item

    with pytest.raises(RegistrationError) as refused:
        server.tool()(report)
    line = inspect.getsourcelines(report)[1] + 1
    assert str(refused.value).startswith(
        f"tool 'report': a plain `def` cannot await ctx.info() (line {line}): the call makes a coroutine that never "
        "runs, and the client gets nothing. Declare the handler `async def` and write `await ctx.info(...)`"
    )
    assert server.tools == {}


@pytest.mark.parametrize(
    "method", ["report_progress", "elicit", "create_message", "list_roots", "notify_list_changed", "log"]
)
def test_every_async_context_method_is_recognised_whatever_the_parameter_is_called(
    method: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / f"sync_{method}.py").write_text(
        "from stratus import Context\n\n\n"
        "def handler(request: Context) -> str:\n"
        f"    getattr(request, {method!r})  # read, not called: allowed\n"
        f"    request.{method}()\n"
        "    return ''\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    handler = importlib.import_module(f"sync_{method}").handler
    with pytest.raises(RegistrationError, match=rf"cannot await request\.{method}\(\) \(line 6\)"):
        McpServer("sync", "1").tool()(handler)


def test_a_handler_whose_source_cannot_be_read_is_registered_unchecked() -> None:
    namespace: dict[str, object] = {"Context": Context}
    exec(compile("def handler(ctx: Context) -> str:\n    ctx.info('x')\n    return ''\n", "<built>", "exec"), namespace)
    server = McpServer("sync", "1")
    server.tool()(namespace["handler"])  # type: ignore[type-var]
    assert list(server.tools) == ["handler"]


def test_a_sync_resource_and_prompt_are_held_to_the_same_rule() -> None:
    server = McpServer("sync", "1")

    def note(ctx: Context) -> str:
        ctx.warning("read")  # type: ignore[unused-coroutine]  # the mistake under test
        return "note"

    with pytest.raises(RegistrationError, match=r"^resource 'note': a plain `def` cannot await ctx\.warning\(\)"):
        server.resource("notes://latest")(note)
    with pytest.raises(RegistrationError, match=r"^prompt 'note': a plain `def` cannot await ctx\.warning\(\)"):
        server.prompt()(note)


async def test_a_sync_tool_that_reads_the_context_or_awaits_it_in_its_own_coroutine_is_served(
    mcp_factory: McpFactory,
) -> None:
    server = McpServer("sync", "1")

    @server.tool()
    def who(ctx: Context) -> str:
        async def later() -> None:
            await ctx.info("never run here")

        del later
        return ctx.method

    mcp = await mcp_factory(server)
    called = (await mcp.stateless("tools/call", {"name": "who", "arguments": {}})).json()["result"]
    assert called["content"] == [{"type": "text", "text": "tools/call"}]
    assert asyncio.iscoroutinefunction(who) is False
