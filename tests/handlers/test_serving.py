"""`stratus serve` under uvicorn: an access log that names no token or session id."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from handlers.serving import redact_path
from tests.processes import stratus_process
from tests.wire import BASE_HEADERS, initialize_message

pytestmark = pytest.mark.uvicorn


def test_the_access_log_names_no_token_and_no_session_id(tmp_path: Path) -> None:
    log_path = tmp_path / "serve.log"
    token = "SECRET-TOKEN-4711"
    with (
        log_path.open("wb") as output,
        stratus_process("examples.demo:server", {}, output=output) as url,
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
