"""The HTTP API's and the Function URL's events (Lambda's payload format 2.0, the buffered function's own front
doors): the request as an ASGI scope and body, and a buffered response as the answer the front door expects.

Format: https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html
(request and response, cookies as their own field, `isBase64Encoded`) and
https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html (Function URLs send the same shape).

Mangum reads this shape too; the answers here are Mangum's to the letter (tests/handlers/test_invocation.py runs
both on the same events): header values encoded as UTF-8, a repeated response header joined with ",", `Set-Cookie`
headers as `cookies`, a body base64-encoded unless its content type is one of Mangum's text types,
`application/json` when the app set none.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import unquote

from stratus.transport.asgi import BUFFERED, HEADERS_READ
from stratus.types import Scope

TEXT_TYPES = (
    "text/",
    "application/json",
    "application/javascript",
    "application/xml",
    "application/vnd.api+json",
    "application/vnd.oai.openapi",
)
"""Content types answered as text (Mangum's defaults); any other body is base64-encoded."""

_ASGI = {"version": "3.0", "spec_version": "2.0"}


def infer(event: dict[str, Any], context: Any) -> bool:
    """Whether `event` is payload 2.0."""
    return event.get("version") == "2.0" and "requestContext" in event


# Read here rather than by Mangum: this is every warm invocation's path, and this reading costs about a third of
# Mangum's (no scope built twice, no per-header helper calls: docs/benchmarks.md).
class Reader:
    """One payload-2.0 event: `scope` and `body` for the app, and the front door's answer to a response."""

    __slots__ = ("body", "scope")

    def __init__(self, event: dict[str, Any], context: Any) -> None:
        given = event.get("headers") or {}
        names = "\n".join(given)  # one string's lower() and isascii() instead of each name's (about 20 k a call)
        headers = dict(given) if names.lower() == names else {key.lower(): value for key, value in given.items()}
        cookies = event.get("cookies")
        if cookies:
            headers["cookie"] = "; ".join(cookies)
        http = event["requestContext"]["http"]
        host = headers.get("host", "mangum")
        name, _, port = host.partition(":")
        self.scope: Scope = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": "1.1",
            "method": http["method"],
            "scheme": headers.get("x-forwarded-proto", "https"),
            "path": (unquote(path) if "%" in path else path) if (path := http["path"]) else "/",
            "raw_path": None,
            "root_path": "",
            "query_string": event.get("rawQueryString", "").encode(),
            "headers": [[key.encode(), value.encode()] for key, value in headers.items()],
            "server": (name, int(port or headers.get("x-forwarded-port", 80))),
            "client": (http["sourceIp"], 0),
            "aws.event": event,
            "aws.context": context,
            "extensions": {BUFFERED: {}},
        }
        if names.isascii() and "".join(headers.values()).isascii():
            self.scope[HEADERS_READ] = headers  # API Gateway joins a repeated header's values with commas already
        body = event.get("body") or b""
        if event.get("isBase64Encoded", False):
            body = base64.b64decode(body)
        self.body: bytes = body if isinstance(body, bytes) else body.encode()

    def __call__(self, response: dict[str, Any]) -> dict[str, Any]:
        headers: dict[str, str] = {}
        cookies: list[str] = []
        for raw_key, raw_value in response["headers"]:
            key, value = raw_key.decode().lower(), raw_value.decode()
            if key == "set-cookie":
                cookies.append(value)
            elif key in headers:
                headers[key] = f"{headers[key]},{value}"
            else:
                headers[key] = value
        headers.setdefault("content-type", "application/json")
        body, encoded = _encode(response["body"], headers["content-type"])
        answer: dict[str, Any] = {"statusCode": response["status"], "body": body, "headers": headers}
        if cookies:
            answer["cookies"] = cookies
        answer["isBase64Encoded"] = encoded
        return answer


def _encode(body: bytes, content_type: str) -> tuple[str, bool]:
    """The body as the answer carries it, and whether that is base64."""
    if not body:
        return "", False
    for text in TEXT_TYPES:
        if text in content_type:
            try:
                return body.decode(), False
            except UnicodeDecodeError:
                break
    return base64.b64encode(body).decode(), True
