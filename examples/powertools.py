"""A tool using Powertools for AWS Lambda the ordinary way, served with `STRATUS_TELEMETRY=powertools`.

`Logger()` and `Metrics()` take their service and namespace from POWERTOOLS_SERVICE_NAME and
POWERTOOLS_METRICS_NAMESPACE, which Stratus shares (it sets them from the server's name and
STRATUS_METRICS_NAMESPACE when they are not set). Each log line of the tool carries the call's correlation fields
(lambda_request_id, mcp_request_id, mcp_method, item, session_id, principal); its metrics are flushed after each
invocation, beside Stratus's own. `scripts/lint-template` serves it from the sam-built package.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from stratus import McpServer

server = McpServer("orders", "1.0.0")
logger = Logger()
metrics = Metrics()


@server.tool()
def place_order(item: str, quantity: int = 1) -> str:
    """Place an order for `quantity` of `item`."""
    logger.info("placing order", extra={"quantity": quantity})
    metrics.add_metric(name="OrdersPlaced", unit=MetricUnit.Count, value=quantity)
    return f"ordered {quantity} x {item}"
