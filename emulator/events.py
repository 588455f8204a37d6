"""Lambda events as the front doors build them, and the proxy responses they read back.

- HTTP API, payload format 2.0:
  https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html
- Function URL (the same 2.0 shape, route `$default`):
  https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html
- REST API Lambda proxy integration, payload format 1.0:
  https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html

`domainName` is the API's own domain, never what the client wrote in Host; locally the API's domain is the
address the client connected to (a rebound page names another Host, as it would in front of AWS).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import time
import uuid
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any
from urllib.parse import parse_qsl

from stratus.emulator.intrinsics import ACCOUNT_ID


@dataclass(frozen=True)
class Request:
    """An HTTP request as a front door received it."""

    method: str
    path: str
    query: str
    headers: tuple[tuple[str, str], ...]
    """Names lower-cased, in arrival order, repeated names kept."""
    body: bytes
    domain: str
    source_ip: str = "127.0.0.1"
    gone: asyncio.Future[None] | None = field(default=None, compare=False)
    """Done once the client has left (the local server reported it): a request still queued then is dropped."""

    def header(self, name: str) -> str | None:
        values = [value for key, value in self.headers if key == name]
        return ",".join(values) if values else None


@dataclass
class Answer:
    """A buffered HTTP answer (a gateway's own, or a proxy response read back)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


def json_answer(status: int, payload: Any, *extra: tuple[str, str]) -> Answer:
    """A gateway's own JSON answer (its error bodies are JSON with `message` or `Message`)."""
    return Answer(
        status, [("content-type", "application/json"), *extra], json.dumps(payload, separators=(",", ":")).encode()
    )


def _body(request: Request) -> tuple[str | None, bool]:
    if not request.body:
        return None, False
    try:
        return request.body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(request.body).decode(), True


def _single_headers(request: Request, *, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Headers as payload 2.0 has them: one entry per name, repeated values joined with commas."""
    joined: dict[str, str] = {}
    for name, value in request.headers:
        if name in skip:
            continue
        joined[name] = f"{joined[name]},{value}" if name in joined else value
    return joined


def _query_parameters(query: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        found.setdefault(name, []).append(value)
    return found


def v2_event(
    request: Request,
    *,
    api_id: str,
    route_key: str,
    stage: str,
    path_parameters: dict[str, str] | None = None,
    authorizer: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Payload format 2.0 (HTTP API, Function URL)."""
    body, encoded = _body(request)
    cookie = request.header("cookie")
    query = _query_parameters(request.query)
    now = time.time()
    context: dict[str, Any] = {
        "accountId": ACCOUNT_ID,
        "apiId": api_id,
        "domainName": request.domain,
        "domainPrefix": request.domain.split(".", 1)[0],
        "http": {
            "method": request.method,
            "path": request.path,
            "protocol": "HTTP/1.1",
            "sourceIp": request.source_ip,
            "userAgent": request.header("user-agent") or "",
        },
        "requestId": str(uuid.uuid4()),
        "routeKey": route_key,
        "stage": stage,
        "time": formatdate(now, usegmt=True),
        "timeEpoch": int(now * 1000),
    }
    if authorizer is not None:
        context["authorizer"] = authorizer
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": request.path,
        "rawQueryString": request.query,
        "headers": _single_headers(request, skip=("cookie",)),
        "requestContext": context,
        "isBase64Encoded": encoded,
    }
    if cookie:
        cookies = [value for name, value in request.headers if name == "cookie"]
        event["cookies"] = [part.strip() for value in cookies for part in value.split(";") if part.strip()]
    if query:
        event["queryStringParameters"] = {name: ",".join(values) for name, values in query.items()}
    if path_parameters:
        event["pathParameters"] = path_parameters
    if body is not None:
        event["body"] = body
    return event


def v1_event(
    request: Request,
    *,
    api_id: str,
    stage: str,
    resource: str,
    path: str,
    path_parameters: dict[str, str] | None = None,
    domain_path: str | None = None,
) -> dict[str, Any]:
    """Payload format 1.0 (REST API Lambda proxy integration); `path` is the request path without the stage, or on a
    custom domain (`domain_path`) the path as requested, its base path included (which the Web Adapter removes:
    AWS_LWA_REMOVE_BASE_PATH)."""
    body, encoded = _body(request)
    multi: dict[str, list[str]] = {}
    for name, value in request.headers:
        multi.setdefault(name, []).append(value)
    query = _query_parameters(request.query)
    return {
        "resource": resource,
        "path": domain_path or path,
        "httpMethod": request.method,
        "headers": {name: values[-1] for name, values in multi.items()} or None,
        "multiValueHeaders": multi or None,
        "queryStringParameters": {name: values[-1] for name, values in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": path_parameters or None,
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT_ID,
            "apiId": api_id,
            "domainName": request.domain,
            "domainPrefix": request.domain.split(".", 1)[0],
            "extendedRequestId": str(uuid.uuid4()),
            "httpMethod": request.method,
            "identity": {"sourceIp": request.source_ip, "userAgent": request.header("user-agent")},
            "path": domain_path or f"/{stage}{path}",
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "resourcePath": resource,
            "stage": stage,
        },
        "body": body,
        "isBase64Encoded": encoded,
    }


class MalformedResponseError(ValueError):
    """The function's answer is not a proxy response the front door can read."""


def _decoded_body(payload: dict[str, Any]) -> bytes:
    raw = payload.get("body")
    if raw is None:
        return b""
    text = raw if isinstance(raw, str) else json.dumps(raw)
    if payload.get("isBase64Encoded"):
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise MalformedResponseError("isBase64Encoded with a body that is not base64") from None
    return text.encode()


def read_v2_response(payload: Any) -> Answer:
    """A payload format 2.0 answer. Without `statusCode` the whole payload is the JSON body of a 200, as the HTTP
    API (and a Function URL) infers it."""
    if not isinstance(payload, dict) or "statusCode" not in payload:
        return Answer(200, [("content-type", "application/json")], json.dumps(payload).encode())
    headers = [(str(name).lower(), str(value)) for name, value in (payload.get("headers") or {}).items()]
    headers += [("set-cookie", str(cookie)) for cookie in payload.get("cookies") or ()]
    return Answer(_status(payload), headers, _decoded_body(payload))


def read_v1_response(payload: Any) -> Answer:
    """A payload format 1.0 answer: `statusCode` is required (without it, API Gateway answers 502)."""
    if not isinstance(payload, dict) or "statusCode" not in payload:
        raise MalformedResponseError("no statusCode")
    headers = [(str(name).lower(), str(value)) for name, value in (payload.get("headers") or {}).items()]
    names = {name for name, _ in headers}
    for name, values in (payload.get("multiValueHeaders") or {}).items():
        if str(name).lower() in names:
            headers = [(key, value) for key, value in headers if key != str(name).lower()]
        headers += [(str(name).lower(), str(value)) for value in values]
    return Answer(_status(payload), headers, _decoded_body(payload))


def _status(payload: dict[str, Any]) -> int:
    try:
        status = int(payload["statusCode"])
    except (TypeError, ValueError):
        raise MalformedResponseError("statusCode is not a number") from None
    if not 100 <= status <= 599:
        raise MalformedResponseError("statusCode out of range")
    return status
