"""A Docker-free stand-in for API Gateway in front of the buffered Lambda handler.

`stratus local` serves HTTP on 127.0.0.1 and turns each request into an API Gateway event (HTTP API v2 or REST
API v1), runs it through the real buffered handler and turns the handler's answer back into HTTP. Like a Lambda
container, the handler lives on one worker thread with its own event loop and serves one event at a time.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from core import McpServer, Settings
from core.transport.asgi import Receive, Scope, Send, read_body, request_headers
from handlers.adapter import make_handler

API_ID = "local"


class LocalContext:
    """The Lambda context attributes the handler reads."""

    function_name = "stratus-local"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:stratus-local"

    def __init__(self, timeout_seconds: float) -> None:
        self.aws_request_id = str(uuid.uuid4())
        self._ends = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._ends - time.monotonic()) * 1000))


def http_api_event(
    method: str, path: str, query: str, headers: dict[str, str], body: bytes, host: str
) -> dict[str, Any]:
    """The request as API Gateway HTTP API (payload 2.0) hands it to Lambda."""
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": API_ID,
            "domainName": host,
            "domainPrefix": API_ID,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "timeEpoch": int(time.time() * 1000),
        },
        "body": base64.b64encode(body).decode() if body else None,
        "isBase64Encoded": bool(body),
    }


def rest_api_event(
    method: str, path: str, query: str, headers: dict[str, str], body: bytes, host: str
) -> dict[str, Any]:
    """The request as API Gateway REST API (payload 1.0) hands it to Lambda."""
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": dict(part.split("=", 1) for part in query.split("&") if "=" in part) or None,
        "multiValueQueryStringParameters": None,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": API_ID,
            "domainName": host,
            "httpMethod": method,
            "path": f"/local{path}",
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "resourcePath": path,
            "stage": "local",
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": base64.b64encode(body).decode() if body else None,
        "isBase64Encoded": bool(body),
    }


def listening_address(scope: Scope) -> str:
    """The emulated API's domain: the address the client connected to. API Gateway's `domainName` is the API's
    own, never what the client wrote in Host; taking Host would let a rebound page (DNS rebinding) name itself."""
    server = scope.get("server")
    address = str(server[0]) if server else "127.0.0.1"
    return f"[{address}]" if ":" in address else address


class GatewayEmulator:
    """An ASGI app playing API Gateway: request -> event -> the buffered handler -> response."""

    def __init__(self, server: McpServer, settings: Settings, *, payload: str = "v2", timeout: float = 29.0) -> None:
        if payload not in ("v1", "v2"):
            raise ValueError("payload must be v1 or v2")
        self.payload = payload
        self.timeout = timeout
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lambda-container")
        # The handler is built on its worker thread, which keeps that thread's event loop: a container's.
        self._handler = self._worker.submit(self._cold_start, server, settings).result()

    @staticmethod
    def _cold_start(server: McpServer, settings: Settings) -> Any:
        asyncio.set_event_loop(asyncio.new_event_loop())
        return make_handler(server, settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        headers = request_headers(scope)
        build = http_api_event if self.payload == "v2" else rest_api_event
        query = scope.get("query_string", b"").decode()
        event = build(scope["method"], scope["path"], query, headers, body, listening_address(scope))
        context = LocalContext(self.timeout)
        answer = await asyncio.wrap_future(self._worker.submit(self._handler, event, context))
        raw = answer.get("body") or ""
        content = base64.b64decode(raw) if answer.get("isBase64Encoded") else raw.encode()
        response_headers = [
            (name.encode(), str(value).encode()) for name, value in (answer.get("headers") or {}).items()
        ]
        for name, values in (answer.get("multiValueHeaders") or {}).items():
            response_headers += [(name.encode(), str(value).encode()) for value in values]
        response_headers = [(name, value) for name, value in response_headers if name.lower() != b"content-length"]
        response_headers.append((b"content-length", str(len(content)).encode()))
        await send({"type": "http.response.start", "status": answer["statusCode"], "headers": response_headers})
        await send({"type": "http.response.body", "body": content})

    def close(self) -> None:
        self._worker.submit(self._shut_down).result()
        self._worker.shutdown()

    def _shut_down(self) -> None:
        self._handler.close()
        asyncio.get_event_loop().close()
