"""One principal cannot hold every place: past `STRATUS_MAX_SESSIONS_PER_PRINCIPAL` its new sessions are refused
with 503 naming the setting, on both session routes, and past `STRATUS_MAX_STREAMS_PER_PRINCIPAL` its new streams
with 429, while another principal still gets its own."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

import httpx
import pytest

from stratus import Settings, build_app
from tests.fixtures.apps import shared
from tests.fixtures.jwt_issuer import AUDIENCE, ISSUER, Issuer
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.streams import LISTEN_HEADERS, assert_refused, listen_body, opened, redis_settings
from tests.fixtures.wire import BASE_HEADERS, initialize_message

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

QUOTA = 2
SETTING = "STRATUS_MAX_SESSIONS_PER_PRINCIPAL"


def jwt(issuer: Issuer) -> dict[str, Any]:
    return {"auth_mode": "jwt", "auth_issuer": ISSUER, "auth_audience": AUDIENCE, "auth_jwks_url": issuer.url}


def bearer(issuer: Issuer, subject: str) -> dict[str, str]:
    return {**BASE_HEADERS, "authorization": f"Bearer {issuer.token(sub=subject)}"}


async def test_a_principal_past_its_quota_gets_503_naming_the_setting_and_others_still_get_sessions(
    issuer: Issuer,
) -> None:
    settings = Settings(**jwt(issuer), max_sessions=50, max_sessions_per_principal=QUOTA)
    ana, bob = bearer(issuer, "ana"), bearer(issuer, "bob")
    with uvicorn_serving(build_app(shared, settings)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http:
            held = [(await http.post("/session", headers=ana)).json()["sessionId"] for _ in range(QUOTA)]

            refused = await http.post("/session", headers=ana)
            assert refused.status_code == 503
            assert refused.json() == {
                "error": f"Maximum sessions per principal reached ({QUOTA}); end one of your sessions, retry later, "
                f"or raise {SETTING}",
                "maxSessionsPerPrincipal": QUOTA,
                "setting": SETTING,
            }
            handshake = await http.post("/mcp", json=initialize_message(), headers=ana)
            assert handshake.status_code == 503
            assert "mcp-session-id" not in handshake.headers
            error = handshake.json()["error"]
            assert (error["code"], error["data"]) == (-31503, {"maxSessionsPerPrincipal": QUOTA, "setting": SETTING})

            assert (await http.post("/session", headers=bob)).status_code == 200
            other = await http.post("/mcp", json=initialize_message(), headers=bob)
            assert other.status_code == 200 and other.headers["mcp-session-id"]

            assert (await http.delete(f"/session/{held[0]}", headers=ana)).status_code == 200
            assert (await http.post("/session", headers=ana)).status_code == 200


async def test_a_principal_past_its_stream_cap_gets_429_naming_the_setting_and_others_still_stream(
    issuer: Issuer,
) -> None:
    settings = redis_settings(**jwt(issuer), max_streams_per_principal=2, max_streams_per_session=4)
    ana, bob = bearer(issuer, "ana"), bearer(issuer, "bob")
    with uvicorn_serving(build_app(shared, settings), lifespan="on") as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as http, AsyncExitStack() as streams:
            sessions = [(await http.post("/session", headers=ana)).json()["sessionId"] for _ in range(2)]
            for session in sessions:
                await streams.enter_async_context(opened(http, "GET", f"/events/{session}", headers=ana))
            # Each session is below its own cap, but ana holds her principal's.
            refused = await http.get(f"/events/{sessions[0]}", headers=ana)
            assert_refused(refused, 429, "STRATUS_MAX_STREAMS_PER_PRINCIPAL", 2)
            listen = await http.post("/mcp", json=listen_body(), headers={**LISTEN_HEADERS, **ana})
            error = assert_refused(listen, 429, "STRATUS_MAX_STREAMS_PER_PRINCIPAL", 2)["error"]
            assert error["code"] == -31429

            bobs = opened(http, "POST", "/mcp", json=listen_body(), headers={**LISTEN_HEADERS, **bob})
            acknowledged = (await streams.enter_async_context(bobs)).first  # bob still listens
            assert acknowledged is not None
            assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
