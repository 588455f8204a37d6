"""The floor of Stratus's own stack: bare Mangum + Starlette + pydantic, one route, no MCP logic.

The app (starlette_floor.py) parses one POST to /mcp with a pydantic model, computes `a + b` and returns a
JSON-RPC result as JSON; here Mangum turns it into a Lambda handler.
"""

from __future__ import annotations

from typing import Any

from mangum import Mangum
from starlette_floor import app

_asgi = Mangum(app, lifespan="off")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result: dict[str, Any] = _asgi(event, context)
    return result
