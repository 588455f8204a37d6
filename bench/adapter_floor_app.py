"""The Lambda adapter's own share of a warm call: the buffered handler's adapter (`stratus.handlers.invocation`:
Mangum's event handlers and Stratus's ASGI cycle, as handlers/adapter.py runs them) around an ASGI app that reads
the request body and answers a fixed tools/call result, with no MCP work at all.

Stratus's buffered handler is this adapter plus Stratus; this subject is the part of its instructions per call that
any ASGI app served this way pays. The awslabs handler reads the event itself, with no ASGI cycle in between.
"""

from __future__ import annotations

import asyncio
from typing import Any

from stratus.handlers.invocation import ContainerLoop, invoke

RESULT = b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"3"}],"isError":false}}'
HEADERS = [(b"content-type", b"application/json"), (b"mcp-session-id", b"adapter-floor")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": RESULT})


asyncio.set_event_loop(ContainerLoop())  # as handlers/adapter.py does, once per container


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return invoke(app, event, context)
