"""One principal cannot hold every session place: past `STRATUS_MAX_SESSIONS_PER_PRINCIPAL` its new sessions are
refused with 503 naming the setting, on both session routes, while another principal still gets one."""

from __future__ import annotations

import httpx
import pytest

from core import Settings, build_app
from tests.apps import shared
from tests.core.auth.conftest import AUDIENCE, ISSUER, Issuer
from tests.servers import uvicorn_serving
from tests.wire import BASE_HEADERS, initialize_message

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

QUOTA = 2
SETTING = "STRATUS_MAX_SESSIONS_PER_PRINCIPAL"


async def test_a_principal_past_its_quota_gets_503_naming_the_setting_and_others_still_get_sessions(
    issuer: Issuer,
) -> None:
    settings = Settings(
        auth_mode="jwt",
        auth_issuer=ISSUER,
        auth_audience=AUDIENCE,
        auth_jwks_url=issuer.url,
        max_sessions=50,
        max_sessions_per_principal=QUOTA,
    )
    ana = {**BASE_HEADERS, "authorization": f"Bearer {issuer.token(sub='ana')}"}
    bob = {**BASE_HEADERS, "authorization": f"Bearer {issuer.token(sub='bob')}"}
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
