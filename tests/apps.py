"""Servers the multi-process tests run with `stratus serve --app tests.apps:shared`."""

from __future__ import annotations

from core import Context, McpServer, ToolError
from core.resilience.breaker import BreakerPolicy
from core.resilience.limiter import RateLimit

LIMIT = 20

shared = McpServer("shared", "1.0.0")


@shared.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@shared.tool(rate_limit=RateLimit(rate=0.001, burst=LIMIT))
def limited() -> str:
    """Allowed LIMIT times across every process, then refused for a long while."""
    return "ok"


@shared.tool(breaker=BreakerPolicy(failure_threshold=3, window_seconds=300, cooldown_seconds=300))
def flaky() -> str:
    """Always fails, as a transient error: three failures open its breaker everywhere."""
    raise ToolError("upstream unavailable", retryable=True)


@shared.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's model (sampling), wherever its reply lands."""
    answer = await ctx.create_message([{"role": "user", "content": {"type": "text", "text": question}}], max_tokens=20)
    return f"model said: {answer['content']['text']}"


@shared.tool()
async def ask_user(ctx: Context) -> str:
    """Ask the user for a name (elicitation)."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answer = await ctx.elicit("What is your name?", schema)
    return f"hello {answer.get('content', {}).get('name')} ({answer.get('action')})"


@shared.tool()
async def count_to_three(ctx: Context) -> str:
    """Report progress three times and log once before answering."""
    await ctx.info("counting")
    for step in (1, 2, 3):
        await ctx.report_progress(step, 3, f"step {step}")
    return "done"


@shared.tool(timeout=20)
async def wait_for_cancel(ctx: Context) -> str:
    """Waits until the client cancels it (or its timeout passes)."""
    await ctx.signal.wait()
    return "cancelled"


@shared.tool(timeout=20)
async def hold(ctx: Context) -> str:
    """Says it started, then waits until cancelled (or 20 s pass): a call in flight when its server dies."""
    await ctx.info("holding")
    await ctx.signal.wait()
    return "released"


@shared.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Tells subscribers that `uri` changed."""
    await ctx.notify_resource_updated(uri)
    return "touched"


@shared.tool()
async def reshuffle_tools(ctx: Context) -> str:
    """Tells every listening session that the tools list changed."""
    await ctx.notify_list_changed("tools")
    return "reshuffled"


@shared.resource("note://board", mime_type="text/plain")
def board() -> str:
    """The note board that `touch` announces changes of."""
    return "the board"


@shared.tool()
async def draft(ctx: Context) -> str:
    """Streams its text in two parts before returning all of it."""
    await ctx.stream_content("Once upon ")
    await ctx.stream_content("a time.")
    return "Once upon a time."


@shared.tool(task="optional")
def total(values: list[int]) -> int:
    """Sums the values; a client that asks runs it as a task."""
    return sum(values)


@shared.tool(task="required", timeout=30)
async def vigil(ctx: Context) -> str:
    """Runs only as a task, until it is cancelled (or 30 s pass)."""
    await ctx.signal.wait()
    return "cancelled"
