"""Client ID metadata documents end to end: the official SDK's OAuth client names its client by the URL of a document
served over https (on 127.0.0.1, which STRATUS_GATEWAY_ALLOWED_NETWORKS allows here, as a developer would), the front
fetches it through the gateway's address guard, and the user signs in with no registration at all. A document that
does not name its own URL, or a redirect URI it does not list, is refused."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlencode

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

from tests.fixtures.certificates import loopback_certificate
from tests.fixtures.client_documents import HOST_REDIRECT, Documents
from tests.fixtures.front_sign_in import Front, HeadlessUser, serving_front
from tests.fixtures.oauth_discovery import MemoryTokens
from tests.fixtures.servers import uvicorn_serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
TEST_SECONDS = 60


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Documents]:
    served = Documents()
    certificate = loopback_certificate(tmp_path_factory.mktemp("tls"))
    with pytest.MonkeyPatch.context() as environment, uvicorn_serving(served, tls=certificate) as url:
        environment.setenv("SSL_CERT_FILE", certificate[0])  # the front's fetch trusts the document server
        served.base = url
        yield served


@pytest.fixture(scope="module")
def front(documents: Documents) -> Iterator[Front]:
    with serving_front(gateway_allowed_networks=("127.0.0.0/8",)) as served:
        yield served


async def test_the_sdk_client_signs_in_with_a_client_id_metadata_document(front: Front, documents: Documents) -> None:
    client_id = documents.add("/clients/sdk.json")
    user = HeadlessUser("frank")
    redirect, callback = user.handlers()
    provider = OAuthClientProvider(
        server_url=front.mcp_url,
        client_metadata=OAuthClientMetadata(redirect_uris=[HOST_REDIRECT], token_endpoint_auth_method="none"),
        storage=(tokens := MemoryTokens()),
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=client_id,
    )
    fetched = documents.fetches
    with anyio.fail_after(TEST_SECONDS):
        async with (
            httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(20.0)) as http,
            Client(streamable_http_client(front.mcp_url, http_client=http), read_timeout_seconds=20) as client,
        ):
            result = await client.call_tool("write_note", {"text": "no registration"})
    await user.aclose()
    assert result.content[0].text == "user-frank wrote no registration"  # type: ignore[union-attr]
    assert tokens.client is not None and tokens.client.client_id == client_id
    assert documents.fetches == fetched + 1  # then kept for its max-age: the token request fetched nothing


def authorize_url(front: Front, client_id: str, redirect_uri: str = HOST_REDIRECT) -> str:
    parameters = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": "w1TpKUdYE9hUAcNSeeSRFioHDxfUxuHho_JHAfZ_vDM",
        "code_challenge_method": "S256",
        "state": "s",
    }
    return f"{front.url}/authorize?{urlencode(parameters)}"


async def test_a_document_that_names_another_client_id_is_refused(front: Front, documents: Documents) -> None:
    client_id = documents.add("/clients/impostor.json", client_id="https://trusted.example.com/client.json")
    async with httpx.AsyncClient(timeout=20) as browser:
        answer = await browser.get(authorize_url(front, client_id))
    assert answer.status_code == 400 and "location" not in answer.headers
    assert "does not name its own URL" in answer.text


async def test_a_redirect_uri_the_document_does_not_list_gets_no_redirect(front: Front, documents: Documents) -> None:
    client_id = documents.add("/clients/listed.json")
    async with httpx.AsyncClient(timeout=20) as browser:
        answer = await browser.get(authorize_url(front, client_id, "http://127.0.0.1:4444/steal"))
    assert answer.status_code == 400 and "location" not in answer.headers


async def test_a_document_that_cannot_be_fetched_is_refused(front: Front, documents: Documents) -> None:
    async with httpx.AsyncClient(timeout=20) as browser:
        answer = await browser.get(authorize_url(front, f"{documents.base}/clients/missing.json"))
    assert answer.status_code == 400 and "answered 404" in answer.text


async def test_first_fetches_of_documents_from_one_address_are_capped_naming_the_setting(documents: Documents) -> None:
    """Each new document URL is a fetch and a kept record: one address may cause ten an hour per registration
    STRATUS_AUTH_REGISTRATIONS_PER_HOUR allows it (here 1), and the eleventh is neither fetched nor kept."""
    client_ids = [documents.add(f"/clients/flood-{n}.json") for n in range(11)]
    with serving_front(gateway_allowed_networks=("127.0.0.0/8",), auth_registrations_per_hour=1) as capped:
        fetched = documents.fetches
        async with httpx.AsyncClient(timeout=20) as browser:
            answers = [await browser.get(authorize_url(capped, client_id)) for client_id in client_ids]
    assert [answer.status_code for answer in answers] == [200] * 10 + [429]
    assert "STRATUS_AUTH_REGISTRATIONS_PER_HOUR" in answers[-1].text
    assert documents.fetches == fetched + 10
