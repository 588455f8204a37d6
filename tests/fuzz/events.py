"""The API Gateway HTTP API (v2) event the fuzz tests wrap their requests in."""

from __future__ import annotations

from typing import Any


def http_event(raw: str, headers: dict[str, str]) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": {"host": "localhost", **headers},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "fuzz",
            "domainName": "localhost",
            "http": {"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": "fuzz",
            "routeKey": "$default",
            "stage": "$default",
            "timeEpoch": 1767225600000,
        },
        "body": raw,
        "isBase64Encoded": False,
    }
