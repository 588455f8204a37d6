"""With authentication on, `/health`'s session figures are for authenticated callers; anyone else learns only
whether the server and its store are healthy (and `/health/live` whether it answers)."""

from __future__ import annotations

import pytest

from stratus import Settings
from tests.fixtures.clients import client_for
from tests.fixtures.jwt_issuer import AUDIENCE, ISSUER, Issuer
from tests.fixtures.sample_server import server

pytestmark = pytest.mark.anyio

STATUS_ONLY = {"status", "transport", "store"}


def jwt_settings(issuer: Issuer) -> Settings:
    return Settings(auth_mode="jwt", auth_issuer=ISSUER, auth_audience=AUDIENCE, auth_jwks_url=issuer.url)


async def test_without_a_valid_token_health_shows_no_session_figures(issuer: Issuer) -> None:
    async with client_for(server, jwt_settings(issuer)) as http:
        for headers in ({}, {"authorization": "Bearer not-a-token"}):
            anonymous = await http.get("/health", headers=headers)
            assert anonymous.status_code == 200
            report = anonymous.json()
            assert set(report) == STATUS_ONLY
            assert (report["status"], report["store"]["healthy"]) == ("healthy", True)
            assert "activeSessions" not in anonymous.text and "uptime" not in anonymous.text
        assert (await http.get("/health/live")).json() == {"status": "ok"}
        signed_in = await http.get("/health", headers={"authorization": f"Bearer {issuer.token()}"})
        assert signed_in.status_code == 200
        assert signed_in.json()["sessions"]["activeSessions"] == 0
        assert isinstance(signed_in.json()["uptime"], int)


async def test_in_gateway_mode_a_request_without_authorizer_claims_sees_no_session_figures() -> None:
    async with client_for(server, Settings(auth_mode="gateway")) as http:
        response = await http.get("/health")
        assert (response.status_code, set(response.json())) == (200, STATUS_ONLY)
