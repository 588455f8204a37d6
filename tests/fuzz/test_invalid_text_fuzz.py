"""Fuzzing with text that is not text and numbers past int()'s limit, where a client can put them: ids, tool names,
resource URIs, the REST API's sessionId, `Mcp-Param-*` headers and `Last-Event-ID`. The invariants of
test_wire_fuzz hold (never a 5xx, nothing leaked), and a lone surrogate is always the parse error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratus import Settings, build_app
from stratus.handlers.adapter import make_handler
from stratus.types import ASGIApp, Message
from tests.fixtures.apps import headed
from tests.fixtures.fuzzing import FUZZ, LEAKS, hostile_text, long_digits
from tests.fixtures.lambda_events import http_event
from tests.fixtures.lambda_invoke import LambdaContext
from tests.fixtures.wire import BASE_HEADERS, STATELESS, initialize_message, stateless_meta


@pytest.fixture(scope="module")
def handler() -> Iterator[Any]:
    """The buffered Lambda handler of a server whose tool mirrors a string and an integer in headers."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield make_handler(headed, Settings(max_sessions=0))
    asyncio.set_event_loop(None)
    loop.close()


def holds_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    return False


def answer_of(handler: Any, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
    response = handler(http_event(json.dumps(body), headers), LambdaContext())
    raw = response.get("body") or ""
    assert response["statusCode"] < 500, (response["statusCode"], raw)
    assert not any(leak in raw for leak in LEAKS), raw
    return response["statusCode"], json.loads(raw) if raw else None


@FUZZ
@given(
    request_id=st.one_of(st.integers(), hostile_text),
    method=st.sampled_from(["tools/call", "resources/read", "prompts/get", "initialize", "ping"]),
    name=hostile_text,
    region=hostile_text,
    limit=st.one_of(st.integers(), long_digits),
    stateless=st.booleans(),
)
def test_ids_names_uris_and_parameter_headers_of_any_text_are_refused_cleanly(
    handler: Any, request_id: Any, method: str, name: str, region: str, limit: Any, stateless: bool
) -> None:
    field = "uri" if method == "resources/read" else "name"
    params: dict[str, Any] = {field: name, "arguments": {"region": region, "limit": 5}}
    headers = {**BASE_HEADERS, "mcp-param-limit": str(limit)[:8000]}
    if stateless:
        params["_meta"] = stateless_meta()
        headers.update({"mcp-protocol-version": STATELESS, "mcp-method": method, "mcp-name": "query"})
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    status, answer = answer_of(handler, body, headers)
    if holds_lone_surrogate(body):
        assert status == 400 and answer["error"]["code"] == -32700, answer


@FUZZ
@given(session_id=hostile_text, method=hostile_text)
def test_rest_calls_with_any_session_id_are_refused_cleanly(handler: Any, session_id: str, method: str) -> None:
    body = {"sessionId": session_id, "method": method or "tools/list"}
    status, answer = answer_of(handler, body, {"content-type": "application/json", "accept": "application/json"})
    if holds_lone_surrogate(body):
        assert status == 400 and answer["error"]["code"] == -32700, answer


@FUZZ
@given(limit=st.one_of(long_digits, st.integers().map(str)))
def test_an_integer_parameter_header_of_any_length_is_compared_never_a_500(handler: Any, limit: str) -> None:
    params = {"name": "query", "arguments": {"region": "eu", "limit": 5}, "_meta": stateless_meta()}
    headers = {**BASE_HEADERS, "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "query"}
    headers.update({"mcp-param-region": "eu", "mcp-param-limit": limit})
    status, answer = answer_of(handler, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, headers)
    assert status == 200 or answer["error"]["code"] == -32020, answer


async def _exchange(
    app: ASGIApp, method: str, headers: dict[str, str], body: bytes = b""
) -> tuple[int, dict[str, str], bytes]:
    """One request to the app as a server would make it; the client leaves once its request is read."""
    start: dict[str, Any] = {}
    chunks: list[bytes] = []
    requested = False

    async def receive() -> Message:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        else:
            chunks.append(message.get("body", b""))

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"localhost"), *((k.encode(), v.encode("latin-1")) for k, v in headers.items())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    async with asyncio.timeout(5):
        await app(scope, receive, send)
    answer_headers = {k.decode(): v.decode("latin-1") for k, v in start.get("headers", [])}
    return int(start["status"]), answer_headers, b"".join(chunks)


@pytest.fixture(scope="module")
def streaming(handler: Any) -> tuple[ASGIApp, dict[str, str]]:
    """The app as uvicorn serves it (streams allowed), with a live handshake-era session."""
    app = build_app(headed, Settings(max_sessions=0))
    loop = asyncio.get_event_loop()
    _, headers, _ = loop.run_until_complete(
        _exchange(app, "POST", BASE_HEADERS, json.dumps(initialize_message()).encode())
    )
    return app, {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}


latin1 = st.characters(min_codepoint=32, max_codepoint=255)


@FUZZ
@given(
    last_event_id=st.one_of(
        st.text(latin1, max_size=30),
        st.builds(lambda prefix, number: prefix + number, st.sampled_from(["x-", "g-", "g-1.", "1-"]), long_digits),
        st.builds(
            lambda prefix, number: prefix + number,
            st.sampled_from(["x-", "g-", "g-1."]),
            st.text("0123456789²³¹", max_size=25),
        ),
    )
)
def test_any_last_event_id_is_refused_or_resumed_never_a_500(
    streaming: tuple[ASGIApp, dict[str, str]], last_event_id: str
) -> None:
    app, session = streaming
    headers = {**session, "accept": "text/event-stream", "last-event-id": last_event_id}
    status, _, raw = asyncio.get_event_loop().run_until_complete(_exchange(app, "GET", headers))
    assert status < 500, (status, raw)
    assert not any(leak in raw.decode(errors="replace") for leak in LEAKS), raw
    _, _, number = last_event_id.partition("-")
    if len(number.partition(".")[2] or number) > 4300:
        assert status == 400, raw
