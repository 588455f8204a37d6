"""API Gateway HTTP API (payload v2) events every benchmark subject is driven with.

Imports nothing, so loading it in a cold-start child adds no library module to the measurement.
"""

STATELESS_VERSION = "2026-07-28"
HANDSHAKE_VERSION = "2025-11-25"

STATELESS_META = (
    '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
)
STATELESS_LIST_BODY = '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{' + STATELESS_META + "}}"
STATELESS_DISCOVER_BODY = '{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{' + STATELESS_META + "}}"
HANDSHAKE_LIST_BODY = '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}'
STATELESS_CALL_BODY = (
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},'
    '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    '"io.modelcontextprotocol/clientCapabilities":{}}}}'
)
HANDSHAKE_INITIALIZE_BODY = (
    '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    '"capabilities":{},"clientInfo":{"name":"bench","version":"1.0.0"}}}'
)
HANDSHAKE_INITIALIZED_BODY = '{"jsonrpc":"2.0","method":"notifications/initialized"}'
HANDSHAKE_CALL_BODY = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}'

BASE_HEADERS: dict[str, str] = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "host": "localhost",
}
STATELESS_HEADERS: dict[str, str] = {
    **BASE_HEADERS,
    "mcp-protocol-version": STATELESS_VERSION,
    "mcp-method": "tools/call",
    "mcp-name": "add",
}


def http_api_event(body: str, headers: dict[str, str], path: str = "/mcp") -> dict[str, object]:
    """A POST as API Gateway HTTP API delivers it to Lambda (payload format 2.0)."""
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": dict(headers),
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "bench",
            "domainName": "localhost",
            "domainPrefix": "localhost",
            "http": {
                "method": "POST",
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "stratus-bench",
            },
            "requestId": "bench-request",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Jan/2026:00:00:00 +0000",
            "timeEpoch": 1767225600000,
        },
        "body": body,
        "isBase64Encoded": False,
    }


STATELESS_CALL_EVENT = http_api_event(STATELESS_CALL_BODY, STATELESS_HEADERS)


API_DOMAIN = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
CLIENT_HEADERS: dict[str, str] = {
    "accept": "application/json, text/event-stream",
    "accept-encoding": "gzip, deflate",
    "content-type": "application/json",
    "host": API_DOMAIN,
    "user-agent": "python-httpx/0.28.1",
    "x-amzn-trace-id": "Root=1-6751a2b3-0123456789abcdef01234567",
    "x-forwarded-for": "203.0.113.7",
    "x-forwarded-port": "443",
    "x-forwarded-proto": "https",
}
"""What an MCP client's POST carries through an HTTP API besides the MCP headers: the official Python client's
(httpx) and API Gateway's own (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html);
with `content-length` and the MCP headers, 11 or 12."""


def client_http_api_event(body: str, headers: dict[str, str]) -> dict[str, object]:
    """A POST to /mcp as a client sends it through an HTTP API's default stage: its headers (`CLIENT_HEADERS`,
    `content-length`, then `headers`), the API's own domain in the request context."""
    event = http_api_event(body, {**CLIENT_HEADERS, "content-length": str(len(body.encode())), **headers})
    context = event["requestContext"]
    assert isinstance(context, dict)
    context.update(domainName=API_DOMAIN, domainPrefix=API_DOMAIN.split(".")[0], apiId=API_DOMAIN.split(".")[0])
    context["http"] = {**context["http"], "sourceIp": "203.0.113.7", "userAgent": CLIENT_HEADERS["user-agent"]}
    return event


class LambdaContext:
    """The context object Lambda's Python runtime passes each invocation: its request id, the function's names,
    and the time left before the function's timeout (https://docs.aws.amazon.com/lambda/latest/dg/python-context.html)."""

    function_name = "stratus-bench-BufferedFunction"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:stratus-bench-BufferedFunction"
    memory_limit_in_mb = "512"
    log_group_name = "/aws/lambda/stratus-bench-BufferedFunction"
    log_stream_name = "2026/12/02/[$LATEST]0123456789abcdef"

    def __init__(self, request_id: str, timeout_ms: int = 29_000) -> None:
        import time

        self.aws_request_id = request_id
        self._now = time.time
        self._deadline_ms = int(time.time() * 1000) + timeout_ms

    def get_remaining_time_in_millis(self) -> int:
        return max(self._deadline_ms - int(self._now() * 1000), 0)


def handshake_headers(session_id: str) -> dict[str, str]:
    """Headers of a request inside a legacy (2025-11-25) session."""
    return {**BASE_HEADERS, "mcp-protocol-version": HANDSHAKE_VERSION, "mcp-session-id": session_id}
