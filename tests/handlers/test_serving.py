"""`stratus serve` under uvicorn: an access log that names no token or session id, and no slow or numerous
clients holding the server (real sockets against a real process on 127.0.0.1)."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from stratus.handlers.serving import redact_path
from tests.fixtures.processes import stratus_process
from tests.fixtures.wire import BASE_HEADERS, initialize_message

pytestmark = pytest.mark.uvicorn

SHORT_TIMEOUT_SECONDS = 0.5
CUT_WITHIN_SECONDS = 4.0
"""How long a test waits for the server to act on a 0.5 s timeout (generous: the machine is shared)."""


def test_the_access_log_names_no_token_and_no_session_id(tmp_path: Path) -> None:
    log_path = tmp_path / "serve.log"
    token = "SECRET-TOKEN-4711"
    with (
        log_path.open("wb") as output,
        stratus_process("tests.fixtures.sample_server:server", {}, output=output) as url,
        httpx.Client(base_url=url, timeout=10) as http,
    ):
        initialized = http.post(f"/mcp?access_token={token}", json=initialize_message(), headers=BASE_HEADERS)
        assert initialized.status_code == 200
        session_id = http.post("/session").json()["sessionId"]
        with http.stream("GET", f"/events/{session_id}") as events:
            assert events.status_code == 200
        assert http.delete(f"/session/{session_id}").status_code == 200
    log = log_path.read_text()
    for secret in (token, session_id, initialized.headers["mcp-session-id"]):
        assert secret not in log
    # Still an access log an operator can use: method, path (redacted), status.
    assert '"POST /mcp HTTP/1.1" 200' in log
    assert '"POST /session HTTP/1.1" 200' in log
    assert '"GET /events/{sessionId} HTTP/1.1" 200' in log
    assert '"DELETE /session/{sessionId} HTTP/1.1" 200' in log


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        ("/mcp?access_token=x", "/mcp"),
        ("/events/abc-DEF_1", "/events/{sessionId}"),
        ("/session/abc?x=1", "/session/{sessionId}"),
        ("/session", "/session"),
        ("/health", "/health"),
        ("/events/abc/more", "/events/{sessionId}/more"),
    ],
)
def test_redact_path_drops_the_query_and_session_ids(path: str, logged: str) -> None:
    assert redact_path(path) == logged


@pytest.fixture(scope="module")
def guarded_url() -> Iterator[str]:
    """`stratus serve` with 0.5 s header and body timeouts and at most 2 connections."""
    settings = {
        "STRATUS_SERVE_HEADER_TIMEOUT_SECONDS": str(SHORT_TIMEOUT_SECONDS),
        "STRATUS_BODY_TIMEOUT_SECONDS": str(SHORT_TIMEOUT_SECONDS),
        "STRATUS_SERVE_MAX_CONNECTIONS": "2",
    }
    with stratus_process("tests.fixtures.sample_server:server", settings) as url:
        yield url


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=CUT_WITHIN_SECONDS)
    connection.settimeout(CUT_WITHIN_SECONDS)
    return connection


def _read_until_closed(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection; socket.timeout if it does not in time."""
    received = b""
    while chunk := connection.recv(4096):
        received += chunk
    return received


def _closed_or_answered(connection: socket.socket, wait: float) -> bool:
    """Whether the server closed the connection or answered within `wait` seconds (select: no sleep)."""
    readable, _, _ = select.select([connection], [], [], wait)
    return bool(readable)


def test_a_client_that_stops_mid_request_line_is_disconnected(guarded_url: str) -> None:
    with _connect(guarded_url) as connection:
        started = time.monotonic()
        connection.sendall(b"GET /mc")
        assert _read_until_closed(connection) == b""
        assert time.monotonic() - started < CUT_WITHIN_SECONDS


def test_headers_trickled_byte_by_byte_are_cut_at_the_header_timeout(guarded_url: str) -> None:
    request = b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n" + b"x-filler: " + b"a" * 1000
    with _connect(guarded_url) as connection:
        started = time.monotonic()
        for byte in request:  # one byte every 50 ms: never idle for long, but never done either
            if _closed_or_answered(connection, 0.05):
                break
            connection.sendall(bytes([byte]))
            assert time.monotonic() - started < CUT_WITHIN_SECONDS, "the trickle was never cut"
        assert _read_until_closed(connection) == b""
        assert time.monotonic() - started < CUT_WITHIN_SECONDS


def test_a_body_that_stops_arriving_is_answered_408(guarded_url: str) -> None:
    head = (
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n"
    )
    with _connect(guarded_url) as connection:
        started = time.monotonic()
        connection.sendall(head + b'{"jsonrpc": "2.0",')
        answer = _read_until_closed(connection)
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"STRATUS_BODY_TIMEOUT_SECONDS" in answer
        assert time.monotonic() - started < CUT_WITHIN_SECONDS


def test_a_body_trickled_byte_by_byte_is_answered_408(guarded_url: str) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}' + b" " * 500
    head = (
        b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"accept: application/json, text/event-stream\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    with _connect(guarded_url) as connection:
        started = time.monotonic()
        connection.sendall(head)
        for byte in body:
            if _closed_or_answered(connection, 0.05):
                break
            connection.sendall(bytes([byte]))
            assert time.monotonic() - started < CUT_WITHIN_SECONDS, "the trickle was never cut"
        try:
            answer = _read_until_closed(connection)
        except ConnectionResetError:
            # A byte sent just as the server closed: uvicorn closes without lingering (RFC 9112 §9.6), so the
            # kernel answers unread bytes with a reset, which can overtake the 408 already on its way.
            answer = None
        assert answer is None or answer.startswith(b"HTTP/1.1 408 ")
        assert time.monotonic() - started < CUT_WITHIN_SECONDS


def test_a_request_over_the_connection_limit_is_answered_503(guarded_url: str) -> None:
    with (
        httpx.Client(base_url=guarded_url, timeout=10) as first,
        httpx.Client(base_url=guarded_url, timeout=10) as second,
        httpx.Client(base_url=guarded_url, timeout=10) as third,
    ):
        # Each client holds one connection: its session's event stream stays open.
        first_session = first.post("/session").json()["sessionId"]
        second_session = second.post("/session").json()["sessionId"]
        with first.stream("GET", f"/events/{first_session}") as held:
            assert held.status_code == 200
            with second.stream("GET", f"/events/{second_session}") as also_held:
                assert also_held.status_code == 200  # two connections: within the limit
                refused = third.get("/health/live")
                assert refused.status_code == 503
                assert "STRATUS_SERVE_MAX_CONNECTIONS" in refused.text
        for client, session_id in ((first, first_session), (second, second_session)):
            client.delete(f"/session/{session_id}")


def test_a_body_nobody_reads_is_not_waited_for_after_the_answer(guarded_url: str) -> None:
    # /health/live refuses a POST without reading its body; the connection must not stay open for the rest of it.
    head = b"POST /health/live HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 1000\r\n\r\n"
    with _connect(guarded_url) as connection:
        started = time.monotonic()
        connection.sendall(head + b"x")
        assert _read_until_closed(connection).startswith(b"HTTP/1.1 405 ")
        assert time.monotonic() - started < CUT_WITHIN_SECONDS


def test_a_websocket_upgrade_request_is_answered_as_plain_http(guarded_url: str) -> None:
    """Stratus serves no WebSocket, so the server loads no WebSocket library (about 15 ms of a cold start where one
    is installed, e.g. for a gateway's ws:// upstreams): an upgrade request is answered like any other request,
    whatever is installed."""
    upgrade = {
        "connection": "Upgrade",
        "upgrade": "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    answer = httpx.get(f"{guarded_url}/health/live", headers=upgrade, timeout=CUT_WITHIN_SECONDS)
    assert answer.status_code == 200
