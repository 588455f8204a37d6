"""A container of a function behind the AWS Lambda Web Adapter, run as the adapter runs it
(https://github.com/awslabs/aws-lambda-web-adapter, README: "Usage", "Readiness Check", "Configurations",
"Request Context"):

- the function's handler (`run.sh`) is executed from the code directory, with the function's environment;
- the readiness check polls `AWS_LWA_READINESS_CHECK_PATH` (default `/`) on the app's port every 10 ms until an
  answer whose status is healthy (`AWS_LWA_READINESS_CHECK_HEALTHY_STATUS`, default 100-499; or a TCP connect with
  `AWS_LWA_READINESS_CHECK_PROTOCOL=tcp`), within the init phase;
- each invocation is forwarded as HTTP to the app: the event's method, path (less `AWS_LWA_REMOVE_BASE_PATH`),
  query, headers and body, plus `x-amzn-request-context` (the event's `requestContext` as JSON) and
  `x-amzn-lambda-context`, both replacing any header of those names the client sent; an event that is not an HTTP
  event is posted as JSON to `AWS_LWA_PASS_THROUGH_PATH`;
- `AWS_LWA_INVOKE_MODE=response_stream` streams the app's answer back as it is written; `buffered` returns it
  whole as a proxy response.

One difference the emulator cannot avoid: every Lambda environment has its own network namespace, so each can
listen on `AWS_LWA_PORT` (8080); here every container is given a port of its own through `AWS_LWA_PORT`.
"""

from __future__ import annotations

import asyncio
import base64
import http.cookiejar
import json
import socket
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import httpx

from stratus.emulator.containers import INIT_TIMEOUT_SECONDS, Container, FunctionError, Invoked, Streamed

READINESS_INTERVAL_SECONDS = 0.01
ADAPTER_HEADERS = ("x-amzn-request-context", "x-amzn-lambda-context")
_NOT_FORWARDED = frozenset({"content-length", "transfer-encoding", "connection", *ADAPTER_HEADERS})
_NOT_RETURNED = frozenset({"transfer-encoding", "connection", "keep-alive", "content-length", "date"})
"""Hop-by-hop headers, and the app's `date`: the front door dates its answer itself, and two `date` headers would
reach the client."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _healthy(statuses: str, status: int) -> bool:
    for part in statuses.split(","):
        low, _, high = part.strip().partition("-")
        if low and int(low) <= status <= int(high or low):
            return True
    return False


class WebAdapterContainer(Container):
    """The app behind the Web Adapter, on its own port, frozen between invocations."""

    _client: httpx.AsyncClient
    port = 0

    def _setting(self, name: str, default: str) -> str:
        return self.environment.get(f"AWS_LWA_{name}") or default

    async def start(self) -> None:
        self.port = free_port()
        environment = {key: value for key, value in self.environment.items() if key != "AWS_LAMBDA_EXEC_WRAPPER"}
        environment["AWS_LWA_PORT"] = str(self.port)
        self.spawn([str(self.function.code_dir / self.function.handler)], environment)
        # The adapter's own pool: the app's connections stay open while the container is frozen. No timeout of its
        # own: the function's timeout bounds every invocation (front_door.Invocation).
        # No cookie jar either: the adapter forwards each event's cookies and returns the app's Set-Cookie, keeping
        # none (a jar would send one client's cookie with the next client's request to this container).
        self._client = httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{self.port}",
            timeout=None,  # noqa: S113
            cookies=_NO_COOKIES,
        )
        try:
            async with asyncio.timeout(INIT_TIMEOUT_SECONDS):
                while not await self._ready():
                    if not self.alive:
                        raise FunctionError("Runtime.ExitError", "the handler exited before it was ready")
                    await asyncio.sleep(READINESS_INTERVAL_SECONDS)
        except TimeoutError:
            raise FunctionError("Runtime.InitTimeout", "the app was not ready within 10 s") from None

    async def _ready(self) -> bool:
        if self._setting("READINESS_CHECK_PROTOCOL", "http").lower() == "tcp":
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                return False
            writer.close()
            return True
        try:
            answer = await self._client.get(self._setting("READINESS_CHECK_PATH", "/"))
        except httpx.TransportError:
            return False
        return _healthy(self._setting("READINESS_CHECK_HEALTHY_STATUS", "100-499"), answer.status_code)

    async def invoke(self, event: Any, context: dict[str, Any]) -> Invoked:
        request = self._request(event, context)
        try:
            answer = await self._client.send(request, stream=True)
        except httpx.TransportError as error:
            raise FunctionError("Runtime.ExitError", f"the app did not answer: {type(error).__name__}") from None
        headers = [(name.lower(), value) for name, value in answer.headers.multi_items()]
        headers = [(name, value) for name, value in headers if name not in _NOT_RETURNED]
        if self._setting("INVOKE_MODE", "buffered").lower() == "response_stream":
            return Invoked(stream=Streamed(answer.status_code, headers, _relay(answer)))
        body = await answer.aread()
        await answer.aclose()
        return Invoked(payload=_proxy_response(event, answer.status_code, headers, body))

    def _request(self, event: Any, context: dict[str, Any]) -> httpx.Request:
        lambda_context = {
            "request_id": context["awsRequestId"],
            "deadline": context["deadlineMs"],
            "invoked_function_arn": context["invokedFunctionArn"],
            "env_config": {"function_name": self.function.name, "memory": self.function.memory_mb},
        }
        extra = [("x-amzn-lambda-context", json.dumps(lambda_context))]
        if not (isinstance(event, dict) and ("httpMethod" in event or "requestContext" in event)):
            path = self._setting("PASS_THROUGH_PATH", "/events")
            extra.append(("content-type", "application/json"))
            return self._client.build_request("POST", path, headers=extra, content=json.dumps(event).encode())
        extra.append(("x-amzn-request-context", json.dumps(event.get("requestContext") or {})))
        if event.get("version") == "2.0":
            method = event["requestContext"]["http"]["method"]
            path, query = event.get("rawPath") or "/", event.get("rawQueryString") or ""
            headers = list((event.get("headers") or {}).items())
            if event.get("cookies"):
                headers.append(("cookie", "; ".join(event["cookies"])))
        else:
            method, path = event["httpMethod"], event.get("path") or "/"
            query = urlencode(
                [
                    (name, value)
                    for name, values in (event.get("multiValueQueryStringParameters") or {}).items()
                    for value in values
                ]
            )
            headers = [
                (name, value) for name, values in (event.get("multiValueHeaders") or {}).items() for value in values
            ]
        base = self._setting("REMOVE_BASE_PATH", "")
        if base and path.startswith(base):
            path = path[len(base) :] or "/"
        forwarded = [(name, value) for name, value in headers if name.lower() not in _NOT_FORWARDED] + extra
        raw = event.get("body") or ""
        body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode()
        url = httpx.URL(path=path, query=query.encode())
        return self._client.build_request(method, url, headers=forwarded, content=body)

    async def stop(self) -> None:
        await super().stop()
        if hasattr(self, "_client"):
            await self._client.aclose()


_NO_COOKIES = http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
"""A jar whose policy accepts no cookie from any domain."""


async def _relay(answer: httpx.Response) -> AsyncIterator[bytes]:
    try:
        async for chunk in answer.aiter_raw():
            yield chunk
    except httpx.TransportError:
        return  # the app went away mid-stream: the stream just ends
    finally:
        await answer.aclose()


def _proxy_response(event: Any, status: int, headers: list[tuple[str, str]], body: bytes) -> dict[str, Any]:
    """The app's whole answer as the proxy response the event's payload format expects (buffered mode)."""
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for name, value in headers:
        single[name] = value
        multi.setdefault(name, []).append(value)
    response: dict[str, Any] = {
        "statusCode": status,
        "headers": single,
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }
    if isinstance(event, dict) and event.get("version") == "2.0":
        response["cookies"] = multi.pop("set-cookie", [])
        single.pop("set-cookie", None)
    else:
        response["multiValueHeaders"] = multi
    return response
