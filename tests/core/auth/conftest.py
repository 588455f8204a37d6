from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

ISSUER = "https://auth.example.com/"
AUDIENCE = "https://mcp.example.com/mcp"


@cache
def private_key(kid: str, kind: str) -> Any:
    """A real key pair per name, made once per test run (RSA generation is slow)."""
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


@dataclass
class Issuer:
    """A token issuer for tests: real RSA and EC keys made here, a JWKS served over HTTP on 127.0.0.1."""

    url: str = ""
    keys: dict[str, Any] = field(default_factory=dict)
    published: list[str] = field(default_factory=list)
    requests: int = 0
    status: int = 200
    """What the JWKS endpoint answers: 200 with the key set, anything else an error."""
    gate: threading.Event | None = None
    """When set to an Event, each request waits for it (at most 10 s) before answering: a slow issuer."""
    on_request: Callable[[], None] | None = None
    """Called (on the server's thread) as each request arrives, before waiting at the gate."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add_key(self, kid: str, kind: str = "rsa", *, publish: bool = True) -> None:
        self.keys[kid] = private_key(kid, kind)
        if publish:
            self.published.append(kid)

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid in self.published:
            jwk = json.loads(
                jwt.algorithms.get_default_algorithms()[self.algorithm(kid)].to_jwk(self.keys[kid].public_key())
            )
            keys.append({**jwk, "kid": kid, "use": "sig"})
        return {"keys": keys}

    def algorithm(self, kid: str) -> str:
        return "RS256" if isinstance(self.keys[kid], rsa.RSAPrivateKey) else "ES256"

    def token(self, kid: str = "rsa-1", *, sign_with: str | None = None, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "user-1", "iat": now, "exp": now + 300, "scope": "tools:read"}
        body.update(claims)
        body = {key: value for key, value in body.items() if value is not None}
        key = self.keys[sign_with or kid]
        return jwt.encode(body, key, algorithm=self.algorithm(sign_with or kid), headers={"kid": kid})


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
