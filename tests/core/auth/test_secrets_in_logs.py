"""Secrets stay out of the logs: bearer tokens (valid, forged, malformed), Authorization headers and the text of
exceptions raised by tools, whatever the outcome of the request."""

from __future__ import annotations

import logging

import pytest

from stratus import Context, McpServer, Settings
from tests.fixtures.clients import client_for
from tests.fixtures.jwt_issuer import AUDIENCE, ISSUER, Issuer
from tests.fixtures.wire import McpHttp

pytestmark = pytest.mark.anyio


async def test_tokens_authorization_headers_and_exception_text_never_reach_the_logs(
    issuer: Issuer, caplog: pytest.LogCaptureFixture
) -> None:
    secured = McpServer("secured")

    @secured.tool()
    def explode(ctx: Context) -> str:
        raise RuntimeError("db password is hunter2")

    settings = Settings(auth_mode="jwt", auth_issuer=ISSUER, auth_audience=AUDIENCE, auth_jwks_url=issuer.url)
    good = issuer.token(sub="alice")
    issuer.add_key("rogue", publish=False)
    forged = issuer.token(sub="mallory", sign_with="rogue")
    caplog.set_level(logging.DEBUG)
    async with client_for(secured, settings) as http:
        mcp = McpHttp(http)
        for token in (good, forged, "not.a.jwt"):
            headers = {"authorization": f"Bearer {token}", "mcp-name": "explode"}
            response = await mcp.stateless("tools/call", {"name": "explode"}, headers=headers)
            assert response.status_code in (200, 401)
            assert "hunter2" not in response.text
    logged = "\\n".join(f"{record.getMessage()} {record.__dict__} {record.exc_text or ''}" for record in caplog.records)
    for secret in (good, forged, "not.a.jwt", "Bearer ", good.split(".")[2]):
        assert secret not in logged, secret
    assert caplog.records, "the failures were logged (with a reference), just not their secrets"
