"""More fuzzing at the edges: whole Lambda events of every trigger, mutated; pagination cursors; sealed request
state; the seed REST API's bodies and paths. Same invariants as test_wire_fuzz: never a 5xx or an uncaught
exception, nothing leaked, and no forged cursor or request state ever accepted."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fixtures.fuzzing import FUZZ, LEAKS, json_values
from tests.fixtures.lambda_events import http_event
from tests.fixtures.lambda_invoke import LambdaContext
from tests.fixtures.wire import BASE_HEADERS, STATELESS, stateless_meta

EVENTS = Path(__file__).parent.parent / "events"
RECORDED = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in EVENTS.glob("*.json")}


def assert_clean(response: Any) -> None:
    assert isinstance(response, dict), response
    assert isinstance(response.get("statusCode"), int) and response["statusCode"] < 500, response
    body = str(response.get("body") or "")
    assert not any(leak in body for leak in LEAKS), body


@st.composite
def mutated_events(draw: st.DrawFn) -> dict[str, Any]:
    """A recorded event of any trigger with some of its fields removed or replaced by arbitrary JSON."""
    event: dict[str, Any] = copy.deepcopy(RECORDED[draw(st.sampled_from(sorted(RECORDED)))])
    for _ in range(draw(st.integers(0, 3))):
        target = event
        path = draw(st.lists(st.sampled_from(sorted(event)), min_size=1, max_size=1))
        key = path[0]
        if isinstance(target.get(key), dict) and target[key] and draw(st.booleans()):
            target, key = target[key], draw(st.sampled_from(sorted(target[key])))
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = draw(json_values)
    return event


@FUZZ
@given(event=mutated_events())
def test_any_mutated_lambda_event_is_answered_never_raised(handler: Any, event: dict[str, Any]) -> None:
    assert_clean(handler(event, LambdaContext()))


def stateless_post(method: str, params: dict[str, Any], name: str | None = None) -> tuple[str, dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": stateless_meta()}}
    headers = {**BASE_HEADERS, "mcp-protocol-version": STATELESS, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return json.dumps(body), headers


@FUZZ
@given(cursor=st.one_of(st.text(max_size=80), st.binary(max_size=60).map(lambda raw: raw.hex())))
def test_a_forged_cursor_is_invalid_params_never_a_page(handler: Any, cursor: str) -> None:
    raw, headers = stateless_post("tools/list", {"cursor": cursor})
    response = handler(http_event(raw, headers), LambdaContext())
    assert_clean(response)
    answer = json.loads(response["body"])
    assert answer["error"]["code"] == -32602, answer


@FUZZ
@given(state=st.text(max_size=200), responses=json_values)
def test_a_forged_request_state_never_resumes_a_call(handler: Any, state: str, responses: Any) -> None:
    params = {"name": "add", "arguments": {"a": 1, "b": 2}, "requestState": state, "inputResponses": responses}
    raw, headers = stateless_post("tools/call", params, "add")
    response = handler(http_event(raw, headers), LambdaContext())
    assert_clean(response)
    answer = json.loads(response["body"])
    assert "error" in answer or answer["result"].get("isError") is True, answer


@FUZZ
@given(
    body=st.one_of(
        st.fixed_dictionaries({"sessionId": json_values, "method": json_values, "params": json_values}),
        st.fixed_dictionaries({"sessionId": st.text(max_size=40)}, optional={"method": st.text(max_size=20)}),
    ),
    path=st.sampled_from(["/mcp", "/session", "/session/x", "/events/x"]),
    tail=st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), max_size=20),
)
def test_rest_calls_with_any_body_or_path_are_refused_cleanly(handler: Any, body: Any, path: str, tail: str) -> None:
    event = http_event(json.dumps(body), {"content-type": "application/json", "accept": "application/json"})
    target = path + (tail if path.endswith("x") else "")
    event["rawPath"] = event["requestContext"]["http"]["path"] = target
    assert_clean(handler(event, LambdaContext()))


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_rest_paths_with_any_method_are_refused_cleanly(handler: Any, method: str) -> None:
    for path in ("/session/unknown", "/events/unknown", "/mcp", "/session"):
        event = http_event("", {"accept": "application/json"})
        event["rawPath"] = event["requestContext"]["http"]["path"] = path
        event["requestContext"]["http"]["method"] = method
        assert_clean(handler(event, LambdaContext()))
