"""The Lambda adapter's own share of a warm call: Mangum (lifespan off, as handlers/adapter.py runs it) around an
ASGI app that reads the request body and answers a fixed tools/call result, with no MCP work at all.

Stratus's buffered handler is Mangum plus Stratus; this subject is the part of its instructions per call that any
ASGI app served through Mangum pays. The awslabs handler reads the event itself, with no ASGI cycle in between.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mangum import Mangum

RESULT = b'{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"3"}],"isError":false}}'
HEADERS = [(b"content-type", b"application/json"), (b"mcp-session-id", b"mangum-floor")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": RESULT})


asyncio.set_event_loop(asyncio.new_event_loop())  # as handlers/adapter.py does, once per container
handler = Mangum(app, lifespan="off")
