"""The floor of Stratus's own stack as an ASGI app: bare Starlette + pydantic, one route, no MCP logic.

One POST to /mcp is parsed by a pydantic model, `a + b` is computed and a JSON-RPC result is returned as JSON.
floor_app.py puts it under Mangum (the buffered floor); uvicorn serves it as it is (the streaming floor).
"""

from __future__ import annotations

from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class Arguments(BaseModel):
    a: int
    b: int


class CallParams(BaseModel):
    name: str
    arguments: Arguments


class ToolsCall(BaseModel):
    jsonrpc: str
    id: int | str
    method: str
    params: CallParams


async def mcp(request: Request) -> JSONResponse:
    call = ToolsCall.model_validate_json(await request.body())
    total = call.params.arguments.a + call.params.arguments.b
    content = [{"type": "text", "text": str(total)}]
    return JSONResponse({"jsonrpc": "2.0", "id": call.id, "result": {"content": content}})


app = Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])
