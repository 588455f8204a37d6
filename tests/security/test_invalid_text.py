"""Invalid text and over-long numbers, sent to a real `stratus serve`: a lone UTF-16 surrogate anywhere in a body, an
`Mcp-Param-*` integer or a `Last-Event-ID` past int()'s 4,300 digits. Each is refused as the client's invalid input
(400, its JSON-RPC code), never a 500, and nothing is logged as an error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stratus.protocol.header_values import encode_header_value
from tests.fixtures.processes import stratus_process
from tests.fixtures.wire import BASE_HEADERS, STATELESS, initialize_message, stateless_meta

LONE = "\ud800"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """`stratus serve` of a server whose tool mirrors an integer in a header; its output (the log) in a file."""
    log = tmp_path_factory.mktemp("invalid-text") / "serve.log"
    with log.open("w+b") as output, stratus_process("tests.fixtures.apps:headed", {}, output=output) as url:
        yield url, log


def new_lines(log: Path, since: int) -> str:
    """What the server logged after `since` bytes of its log."""
    with log.open("rb") as text:
        text.seek(since)
        return text.read().decode(errors="replace")


def stateless(method: str, params: dict[str, Any], request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": stateless_meta()}}


def post(url: str, body: bytes, headers: dict[str, str] | None = None, path: str = "/mcp") -> httpx.Response:
    return httpx.post(url + path, content=body, headers={**BASE_HEADERS, **(headers or {})}, timeout=10)


MIRRORED = {"mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "query"}
BODIES = {
    "the id of an initialize": json.dumps({**initialize_message(), "id": LONE}).encode(),
    "a tool name": json.dumps(stateless("tools/call", {"name": f"query{LONE}", "arguments": {}})).encode(),
    "a resource uri": json.dumps(stateless("resources/read", {"uri": f"note://{LONE}"})).encode(),
    "a member name": json.dumps(stateless("tools/list", {LONE: 1})).encode(),
    "a batch's id": json.dumps([{**initialize_message(), "id": "\udfff"}]).encode(),
    "the REST API's sessionId": json.dumps({"sessionId": LONE, "method": "tools/list"}).encode(),
    "an id as UTF-8 bytes": b'{"jsonrpc":"2.0","id":"\xed\xa0\x80","method":"ping"}',
}


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_a_lone_surrogate_anywhere_in_a_body_is_a_parse_error_not_a_500(served: tuple[str, Path], body: bytes) -> None:
    url, log = served
    logged = log.stat().st_size
    response = post(url, body, MIRRORED)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["error"]["code"] == -32700
    assert "id" not in answer  # no id can be echoed: it is not text
    assert "Traceback" not in new_lines(log, logged)


def test_a_lone_surrogate_in_a_session_rest_body_is_a_400(served: tuple[str, Path]) -> None:
    url, log = served
    logged = log.stat().st_size
    response = post(url, json.dumps({"capabilities": {LONE: {}}}).encode(), path="/session")
    assert response.status_code == 400 and response.json()["error"]["code"] == -32700
    assert "Traceback" not in new_lines(log, logged)


def test_a_surrogate_pair_escaped_in_json_is_one_character_and_served(served: tuple[str, Path]) -> None:
    url, _ = served
    region = "Kyōto 😀"
    body = json.dumps(stateless("tools/call", {"name": "query", "arguments": {"region": region, "limit": 5}}))
    headers = {**MIRRORED, "mcp-param-region": encode_header_value(region), "mcp-param-limit": "5"}
    response = post(url, body.encode(), headers)  # json.dumps writes 😀 as the pair \ud83d\ude00
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == f"{region}:5"


def call_query(url: str, limit_header: str) -> httpx.Response:
    body = json.dumps(stateless("tools/call", {"name": "query", "arguments": {"region": "eu", "limit": 5}}))
    headers = {**MIRRORED, "mcp-param-region": "eu", "mcp-param-limit": limit_header}
    return post(url, body.encode(), headers)


@pytest.mark.parametrize(
    "header",
    ["1" * 5000, "1e" + "1" * 5000, "5e-" + "1" * 5000, "-" + "9" * 4301],
    ids=["digits", "exponent", "negative exponent", "negative"],
)
def test_an_integer_parameter_header_past_ints_digit_limit_is_a_header_mismatch(
    served: tuple[str, Path], header: str
) -> None:
    url, log = served
    logged = log.stat().st_size
    response = call_query(url, header)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == -32020
    assert "Traceback" not in new_lines(log, logged)


@pytest.mark.parametrize("header", ["0" * 5000 + "5", "5." + "0" * 5000, "50" + "0" * 5000 + "e-5001"])
def test_an_integer_parameter_header_with_zeros_past_the_limit_still_matches_numerically(
    served: tuple[str, Path], header: str
) -> None:
    response = call_query(served[0], header)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == "eu:5"


@pytest.mark.parametrize(
    "last_event_id",
    [
        b"x-" + b"9" * 5000,
        b"g-" + b"9" * 5000,
        b"g-1." + b"9" * 5000,
        b"x-\xb2",
        b"g-\xb2",
        b"g-1.\xb2",
        b"x-" + b"9" * 20,
    ],
    ids=["call stream", "get stream", "own log", "superscript", "get superscript", "own superscript", "20 digits"],
)
def test_a_last_event_id_whose_number_names_no_event_is_400_like_any_malformed_id(
    served: tuple[str, Path], last_event_id: bytes
) -> None:
    url, log = served
    logged = log.stat().st_size
    opened = post(url, json.dumps(initialize_message()).encode())
    headers = {
        b"mcp-session-id": opened.headers["mcp-session-id"].encode(),
        b"mcp-protocol-version": b"2025-11-25",
        b"accept": b"text/event-stream",
        b"last-event-id": last_event_id,  # bytes: a header is Latin-1 on the wire
    }
    response = httpx.get(url + "/mcp", headers=headers, timeout=10)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == {
        "code": -32600,
        "message": "Bad Request: Last-Event-ID must be an event id of this session",
    }
    assert "Traceback" not in new_lines(log, logged)
