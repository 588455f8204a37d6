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


def handshake_headers(session_id: str) -> dict[str, str]:
    """Headers of a request inside a legacy (2025-11-25) session."""
    return {**BASE_HEADERS, "mcp-protocol-version": HANDSHAKE_VERSION, "mcp-session-id": session_id}
