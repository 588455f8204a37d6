from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.fixtures.jwt_issuer import Issuer


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    state = Issuer()
    state.add_key("rsa-1")
    state.add_key("ec-1", "ec")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with state._lock:
                state.requests += 1
            if state.on_request is not None:
                state.on_request()
            if state.gate is not None:
                state.gate.wait(10)
            if state.status != 200:
                self.send_error(state.status)
                return
            body = json.dumps(state.jwks()).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
