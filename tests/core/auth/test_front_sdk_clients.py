"""The official SDKs' other OAuth clients against the authorization front, each in its own process as an MCP host
runs it: the Python SDK 1.30 and the TypeScript SDK 1.32.2 start from the MCP URL alone, register themselves, send
the user to sign in (the test plays the browser: the front's consent page, the Cognito stand-in's form), and call a
tool that needs a scope."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.fixtures.front_sign_in import Front, serving_front
from tests.fixtures.sdk_sign_in import CLIENTS, run_sdk_client

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
USERS = {"python-1.30": "dora", "typescript-1.32.2": "erin"}
NAMES = {"python-1.30": "Python SDK 1.30", "typescript-1.32.2": "TypeScript SDK 1.32.2"}
"""How each client script names itself when it registers."""
HOST_REDIRECT = "http://127.0.0.1:33418/callback"


@pytest.fixture(scope="module")
def front() -> Iterator[Front]:
    with serving_front() as served:
        yield served


@pytest.mark.parametrize("client", CLIENTS)
async def test_the_sdk_client_registers_signs_in_and_calls_a_tool_that_needs_a_scope(front: Front, client: str) -> None:
    username = USERS[client]
    run = await run_sdk_client(client, front.mcp_url, username, text=f"from {client}")
    assert run.text == f"user-{username} wrote from {client}"
    asked = parse_qs(urlsplit(run.authorization_url).query)
    assert run.authorization_url.startswith(f"{front.url}/authorize?")
    assert asked["client_id"] == [run.client_id] and asked["redirect_uri"] == [HOST_REDIRECT]
    assert asked["code_challenge_method"] == ["S256"] and asked["resource"] == [front.mcp_url]
    assert asked["scope"] == ["notes:write"]
    # The client ID is one the front issued when the SDK registered: its consent page names the client by the name
    # the SDK registered with.
    async with httpx.AsyncClient(timeout=20) as browser:
        consent = await browser.get(run.authorization_url)
    assert consent.status_code == 200, consent.text
    assert f"Allow Stratus test host ({NAMES[client]}) to use" in consent.text and "registered itself" in consent.text
