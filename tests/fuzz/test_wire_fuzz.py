"""Property-based fuzzing of the MCP endpoint through the buffered Lambda handler, both protocol eras.

Hypothesis builds JSON-RPC messages (well-formed, mutated, and raw garbage), `Mcp-*` headers and content types,
and sends each as an API Gateway HTTP API event. Whatever arrives, the answer must keep the invariants a client
relies on: no 5xx (the in-memory store never has the documented 503 outage), a JSON-RPC answer that the official
schema of its era accepts, and no Python exception text or stack in the body. CI runs a short, derandomized pass;
`STRATUS_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/fuzz` runs the long one (random seeds).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.fixtures.fuzzing import FUZZ, LEAKS, hostile_text, json_values, long_digits
from tests.fixtures.lambda_events import http_event
from tests.fixtures.lambda_invoke import LambdaContext
from tests.fixtures.wire import STATELESS, validate

METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    "subscriptions/listen",
    "tasks/get",
    "tasks/cancel",
    "notifications/initialized",
    "notifications/cancelled",
]

tool_arguments = st.fixed_dictionaries(
    {},
    optional={
        "a": json_values,
        "b": json_values,
        "city": json_values,
        "unit": json_values,
        "numerator": json_values,
        "denominator": json_values,
    },
)
known_params = st.one_of(
    st.fixed_dictionaries(
        {
            "name": st.one_of(st.sampled_from(["add", "forecast", "divide", "nope"]), hostile_text),
            "arguments": tool_arguments,
        }
    ),
    st.fixed_dictionaries({"uri": st.one_of(st.text(max_size=30), st.just("note://welcome"), hostile_text)}),
    st.fixed_dictionaries({"cursor": json_values}),
    st.dictionaries(st.text(max_size=12), json_values, max_size=4),
)


def rarely(draw: st.DrawFn) -> bool:
    """About one time in four, and False when Hypothesis simplifies: mutations stay rare enough that most
    messages reach the dispatcher."""
    return draw(st.booleans()) and draw(st.booleans())


@st.composite
def messages(draw: st.DrawFn) -> tuple[Any, dict[str, str], str, bool]:
    """(body, headers, era, in a session): mostly well-formed JSON-RPC with rare mutations, sometimes garbage."""
    stateless = draw(st.booleans())
    method = draw(st.sampled_from(METHODS)) if not rarely(draw) else draw(st.text(max_size=20))
    params: Any = draw(known_params) if not rarely(draw) else draw(json_values)
    if stateless and isinstance(params, dict) and not rarely(draw):
        meta = {
            "io.modelcontextprotocol/protocolVersion": STATELESS if not rarely(draw) else draw(st.text(max_size=12)),
            "io.modelcontextprotocol/clientCapabilities": {} if not rarely(draw) else draw(json_values),
        }
        params = {**params, "_meta": meta}
    request_id = draw(st.one_of(st.integers(), st.text(max_size=8), hostile_text))
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    if rarely(draw):
        for key in draw(st.lists(st.sampled_from(["jsonrpc", "id", "method", "params"]), min_size=1, max_size=2)):
            message.pop(key, None)
    if rarely(draw):
        message[draw(st.sampled_from(["jsonrpc", "id", "method"]))] = draw(json_values)
    body: Any = message
    if rarely(draw):
        body = draw(st.one_of(st.lists(st.just(message), max_size=3), json_values))
    headers = {"content-type": "application/json" if not rarely(draw) else draw(st.sampled_from(CONTENT_TYPES))}
    headers["accept"] = "application/json, text/event-stream" if not rarely(draw) else draw(st.sampled_from(ACCEPTS))
    name = params.get("name") if isinstance(params, dict) else None
    if stateless:
        headers["mcp-protocol-version"] = STATELESS if not rarely(draw) else draw(st.text(max_size=12))
        headers["mcp-method"] = method if not rarely(draw) else draw(st.text(max_size=20))
        if isinstance(name, str) and not rarely(draw):
            headers["mcp-name"] = name
        elif rarely(draw):
            headers["mcp-name"] = draw(st.text(max_size=20))
        if rarely(draw):
            headers["mcp-param-a"] = draw(st.one_of(st.text(max_size=20), st.just("=?base64?!!?="), long_digits))
    elif not rarely(draw):
        headers["mcp-protocol-version"] = "2025-11-25"
    if rarely(draw) and rarely(draw):
        body, headers["content-type"] = draw(st.text(max_size=60)), "text/plain"  # not JSON at all
    return body, headers, STATELESS if stateless else "2025-11-25", not stateless and not rarely(draw)


CONTENT_TYPES = ["text/plain", "application/json; charset=utf-8", "application/xml", ""]
ACCEPTS = ["application/json", "text/event-stream", "*/*", "text/html", ""]


def check_answer(status: int, raw_body: str, era: str) -> None:
    assert status < 500, (status, raw_body)
    assert not any(leak in raw_body for leak in LEAKS), raw_body
    if not raw_body:
        return
    answer = json.loads(raw_body)
    for one in answer if isinstance(answer, list) else [answer]:
        if not (isinstance(one, dict) and one.get("jsonrpc") == "2.0"):
            continue  # the seed REST API's answers are plain JSON
        if "error" in one:
            validate(era, "JSONRPCErrorResponse", one)
        else:
            validate(era, "JSONRPCResultResponse", one)


@FUZZ
@given(message=messages())
def test_any_message_gets_a_well_formed_answer_that_leaks_nothing(
    handler: Any, session_id: str, message: tuple[Any, dict[str, str], str, bool]
) -> None:
    body, headers, era, in_session = message
    if in_session:
        headers = {**headers, "mcp-session-id": session_id}
    raw = body if isinstance(body, str) and headers.get("content-type") == "text/plain" else json.dumps(body)
    response = handler(http_event(raw, headers), LambdaContext())
    check_answer(response["statusCode"], response.get("body") or "", era)


@FUZZ
@given(
    session_headers=st.dictionaries(
        st.sampled_from(["mcp-session-id", "mcp-protocol-version", "last-event-id"]), st.text(max_size=40)
    ),
    method=st.sampled_from(METHODS),
)
def test_handshake_requests_with_any_session_headers_are_refused_cleanly(
    handler: Any, session_headers: dict[str, str], method: str
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream", **session_headers}
    response = handler(http_event(json.dumps(body), headers), LambdaContext())
    check_answer(response["statusCode"], response.get("body") or "", "2025-11-25")
