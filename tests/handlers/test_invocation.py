"""The buffered handler runs each invocation's ASGI cycle itself (`stratus.handlers.invocation`), with Mangum's
event handlers on either side. What a front door receives must be what Mangum itself answers, for every event shape
AWS delivers: Mangum, run on the same app and the same recorded event, is the oracle."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from mangum import Mangum
from mangum.adapter import DEFAULT_TEXT_MIME_TYPES

from stratus.handlers.front_doors.http_api import TEXT_TYPES
from stratus.handlers.invocation import ContainerLoop, invoke
from stratus.transport.asgi import HEADERS_READ, is_buffered, request_headers
from stratus.types import Message, Receive, Scope, Send
from tests.fixtures.lambda_invoke import LambdaContext, event

SHAPES = ["http_api_v2", "function_url", "rest_api_v1", "alb"]


@pytest.fixture(autouse=True)
def container_loop() -> Iterator[None]:
    loop = ContainerLoop()  # one per container, as handlers/adapter.py sets it
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


def echo(headers: list[tuple[bytes, bytes]], body: bytes, *, status: int = 200, parts: int = 1) -> Any:
    """An app answering `status`, `headers` and `body` (in `parts` messages), recording what it was given."""
    seen: dict[str, Any] = {}
    declared: list[bool] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen["scope"] = {
            key: value
            for key, value in scope.items()
            if not key.startswith("aws.") and key not in (HEADERS_READ, "extensions")
        }
        declared.append(is_buffered(scope))
        if HEADERS_READ in scope:  # the headers the front door already read are the ASGI list's, read again
            unread = {key: value for key, value in scope.items() if key != HEADERS_READ}
            assert request_headers(scope) == request_headers(unread)
        seen["request"] = await receive()
        await send({"type": "http.response.start", "status": status, "headers": headers})
        size = -(-len(body) // parts)
        for start in range(0, max(len(body), 1), max(size, 1)):
            more = start + size < len(body)
            await send({"type": "http.response.body", "body": body[start : start + size], "more_body": more})

    app.seen = seen  # type: ignore[attr-defined]
    app.declared = declared  # type: ignore[attr-defined]
    return app


def both(
    app: Any, shape: str, *, extra: dict[str, str] | None = None, base64_body: bool = False
) -> tuple[Any, Any, dict[str, Any]]:
    """Mangum's answer and ours to the same event, and what the app saw from ours."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    context: Any = LambdaContext()
    theirs = Mangum(app, lifespan="off")(event(shape, request, extra or {}, base64_body=base64_body), context)
    their_view = dict(app.seen)
    ours = invoke(app, event(shape, request, extra or {}, base64_body=base64_body), context)
    assert app.seen == their_view  # the same scope and body message
    assert app.declared[-1] is True  # and every front door declares its answer buffered
    return theirs, ours, app.seen


@pytest.mark.parametrize("shape", SHAPES)
def test_a_json_answer_is_what_mangum_answers_at_every_front_door(shape: str) -> None:
    app = echo([(b"content-type", b"application/json"), (b"mcp-session-id", b"s-1")], b'{"jsonrpc":"2.0"}')
    theirs, ours, seen = both(app, shape)
    assert ours == theirs
    assert ours["statusCode"] == 200 and ours["body"] == '{"jsonrpc":"2.0"}'
    assert seen["request"] == {
        "type": "http.request",
        "body": b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        "more_body": False,
    }


@pytest.mark.parametrize("shape", SHAPES)
def test_repeated_headers_cookies_and_a_body_in_parts_are_answered_as_mangum_answers_them(shape: str) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"set-cookie", b"a=1"),
        (b"set-cookie", b"b=2"),
        (b"vary", b"origin"),
        (b"vary", b"accept"),
    ]
    theirs, ours, _ = both(echo(headers, b'{"long":"' + b"x" * 300 + b'"}', status=202, parts=4), shape)
    assert ours == theirs
    assert ours["statusCode"] == 202


@pytest.mark.parametrize("shape", SHAPES)
def test_a_binary_answer_is_base64_as_mangum_encodes_it(shape: str) -> None:
    theirs, ours, _ = both(echo([(b"content-type", b"application/octet-stream")], bytes(range(256))), shape)
    assert ours == theirs
    assert ours["isBase64Encoded"] is True and base64.b64decode(ours["body"]) == bytes(range(256))


@pytest.mark.parametrize("shape", SHAPES)
def test_a_base64_request_and_a_host_with_its_port_reach_the_app_as_mangum_gives_them(shape: str) -> None:
    app = echo([(b"content-type", b"application/json")], b"{}")
    theirs, ours, seen = both(app, shape, extra={"host": "mcp.example.com:8443"}, base64_body=True)
    assert ours == theirs
    assert seen["request"]["body"] == b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    assert seen["scope"]["server"] == ("mcp.example.com", 8443)


def test_an_http_api_request_reaches_the_app_with_its_headers_cookies_and_query() -> None:
    app = echo([(b"content-type", b"application/json")], b"{}")
    recorded = event("http_api_v2", {}, {"x-custom": "yes"})
    recorded["cookies"] = ["a=1", "b=2"]
    recorded["rawQueryString"] = "q=1&r=two"
    invoke(app, recorded, LambdaContext())
    scope = app.seen["scope"]
    headers = dict(scope["headers"])
    assert headers[b"x-custom"] == b"yes" and headers[b"cookie"] == b"a=1; b=2"
    assert scope["query_string"] == b"q=1&r=two" and scope["method"] == "POST"


def test_after_the_body_the_app_hears_the_client_gone_only_once_the_answer_is_complete() -> None:
    order: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()

        async def listen() -> None:
            message: Message = await receive()
            order.append(message["type"])

        listener = asyncio.ensure_future(listen())
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        turn = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(turn.set_result, None)
        await turn  # the listener, already waiting, runs first if it has anything to hear
        order.append("first part sent")
        await send({"type": "http.response.body", "body": b"b"})
        await asyncio.wait_for(listener, 1)

    answer = invoke(app, event("http_api_v2", {}, {}), LambdaContext())
    assert answer["body"] == "ab"
    assert order == ["first part sent", "http.disconnect"]


def test_an_app_that_raises_is_answered_500_without_its_text(caplog: pytest.LogCaptureFixture) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise ValueError("secret-token-abc")

    with caplog.at_level(logging.ERROR, logger="stratus.lambda"):
        answer = invoke(app, event("http_api_v2", {}, {}), LambdaContext())
    assert answer["statusCode"] == 500
    assert "secret-token-abc" not in answer["body"]
    assert "secret-token-abc" not in caplog.text
    assert [record.__dict__["error_type"] for record in caplog.records] == ["ValueError"]


def test_an_event_from_no_front_door_is_refused_as_mangum_refuses_it() -> None:
    context: Any = LambdaContext()
    with pytest.raises(RuntimeError):
        Mangum(echo([], b""), lifespan="off")({"foo": 1}, context)
    with pytest.raises(RuntimeError):
        invoke(echo([], b""), {"foo": 1}, context)


def test_the_text_types_are_mangums() -> None:
    assert tuple(DEFAULT_TEXT_MIME_TYPES) == TEXT_TYPES
