"""The same one-tool server on FastMCP, as a buffered Lambda handler: its HTTP app in stateless JSON mode under
Mangum, with the lifespan started once (lifespan_once.py) and its per-request INFO logs off."""

import logging

from fastmcp import FastMCP
from lifespan_once import start_lifespan_once
from mangum import Mangum

logging.disable(logging.INFO)

server = FastMCP("add")


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


app = server.http_app(json_response=True, stateless_http=True, host_origin_protection=False)
start_lifespan_once(app)
handler = Mangum(app, lifespan="off")
