"""CORS: a browser page on an allowed origin may preflight, call, and read the session header; others get no
CORS headers (the guard refuses them)."""

from __future__ import annotations

import pytest

from stratus import Settings
from tests.fixtures.clients import client_for
from tests.fixtures.sample_server import server as sample_server

pytestmark = pytest.mark.anyio

APP_ORIGIN = "https://app.example.com"


async def test_an_allowed_origin_is_answered_its_preflight_and_may_read_the_session_header() -> None:
    async with client_for(sample_server, Settings(allowed_origins=(APP_ORIGIN,))) as http:
        preflight = await http.options(
            "/session",
            headers={
                "origin": APP_ORIGIN,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type, mcp-session-id",
            },
        )
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == APP_ORIGIN
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert preflight.headers["access-control-allow-headers"] == "content-type, mcp-session-id"

        created = await http.post("/session", headers={"origin": APP_ORIGIN, "content-type": "application/json"})
        assert created.status_code == 200
        assert created.headers["access-control-allow-origin"] == APP_ORIGIN
        assert "mcp-session-id" in created.headers["access-control-expose-headers"]


async def test_another_origin_gets_403_and_no_cors_headers() -> None:
    async with client_for(sample_server) as http:
        preflight = await http.options(
            "/mcp", headers={"origin": "https://evil.example.com", "access-control-request-method": "POST"}
        )
        assert preflight.status_code == 403
        assert "access-control-allow-origin" not in preflight.headers
