"""Sign-in through the authorization front as deployed: the stack template.yaml describes with AuthMode=front, served
by the emulator (two containers per function, so a sign-in's steps land on either), its state in the real Redis or
in DynamoDB on moto, the Cognito stand-in (oidc-provider) as the upstream user pool, at each OAuthFrontDoor.

- the HTTP API and the Function URL: the official SDKs' OAuth clients (Python 2.3 in process; Python 1.30 and
  TypeScript 1.32.2 in processes of their own), from the MCP URL alone, register (RFC 7591), send the user through
  the consent page and the stand-in's sign-in, and call a tool that needs a scope; and each naming a client ID
  metadata document (served over https on 127.0.0.1) instead of registering;
- the REST API: its proxy integration renames the challenge header and its stage puts the RFC 9728 well-known URLs
  out of reach (tests/emulator/test_oauth_discovery.py pins that the SDK's client cannot discover there), so a
  client that reads the 401's body does it: the front's metadata at OpenID discovery's path inside the stage,
  registration, sign-in and the token, all through `/v1`.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
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
from tests.fixtures.client_documents import Documents
from tests.fixtures.emulated_stack import (
    DOORS,
    HEADERS,
    OAUTH_FRONT_DOORS,
    TEMPLATE,
    VERSION,
    free_ports,
    initialize,
    read_answer,
    serving,
)
from tests.fixtures.front_sign_in import HeadlessUser, browse_to_client, redirect_result
from tests.fixtures.oauth_discovery import MemoryTokens
from tests.fixtures.oidc_provider import Provider, cognito_standin, oidc_provider_install
from tests.fixtures.processes import run_stratus, stratus_process
from tests.fixtures.sdk_sign_in import CLIENTS, run_sdk_client, sign_in_and_call
from tests.fixtures.servers import uvicorn_serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
TEST_SECONDS = 60
HOST_REDIRECT = "http://127.0.0.1:33418/callback"
APP = "tests.fixtures.emulator_apps:notes"
CERTIFICATE_ARN = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    with cognito_standin() as standin:
        yield standin


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Documents, str]]:
    """Client ID metadata documents over https on 127.0.0.1, and the certificate a client must trust for them."""
    served = Documents()
    certificate = loopback_certificate(tmp_path_factory.mktemp("tls"))
    with uvicorn_serving(served, tls=certificate) as url:
        served.base = url
        yield served, certificate[0]


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest, provider: Provider) -> Iterator[tuple[str, str]]:
    """The stack with AuthMode=front at the param's door (`door@store`, `+documents`: its containers may fetch the
    `documents` fixture's client metadata documents); yields the door and its MCP URL."""
    spec, _, option = str(request.param).partition("+")
    front_door, _, store = spec.partition("@")
    first = free_ports(len(DOORS) + 2)  # each door, the emulated Lambda API, then a custom domain's door
    parameters: dict[str, str] = {}
    if front_door == "rest-api-domain":  # the REST API's stage mapped at the root of a custom domain
        front_door = "rest-api"
        parameters.update(RestApiDomainName="mcp.example.com", RestApiCertificateArn=CERTIFICATE_ARN)
        base = f"http://127.0.0.1:{first + len(DOORS) + 1}"
    else:
        door = OAUTH_FRONT_DOORS[front_door]
        base = f"http://127.0.0.1:{first + DOORS.index(door)}" + ("/v1" if door == "StreamingRestApi" else "")
    provider.set_redirect_uris([f"{base}/oauth/callback"])  # the callback URL to register at the user pool
    parameters |= {
        "AuthMode": "front",
        "AuthAudience": f"{base}/mcp",
        "AuthScopes": "notes:write",
        "AuthUpstreamIssuer": provider.issuer,
        "AuthUpstreamClientId": provider.client_id,
        "OAuthFrontDoor": front_door,
    }
    # The client secret stands in for the SSM parameter the template names, as the secret key does.
    environment = {"STRATUS_AUTH_UPSTREAM_CLIENT_SECRET": provider.client_secret}
    if option == "documents":
        _, certificate = request.getfixturevalue("documents")
        environment.update(SSL_CERT_FILE=certificate, STRATUS_GATEWAY_ALLOWED_NETWORKS="127.0.0.0/8")
    with serving(TEMPLATE, parameters=parameters, port=first, store=store, app=APP, environment=environment):
        yield front_door, f"{base}/mcp"


def sdk_provider(mcp_url: str, user: HeadlessUser, *, client_metadata_url: str | None = None) -> OAuthClientProvider:
    redirect, callback = user.handlers()
    metadata = OAuthClientMetadata(
        redirect_uris=[HOST_REDIRECT],
        client_name="SDK host",
        grant_types=["authorization_code", "refresh_token"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=metadata,
        storage=MemoryTokens(),
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=client_metadata_url,
    )


SDK_STACKS = [
    "http-api@redis",
    "function-url@redis",
    "rest-api-domain@redis",
    "http-api@dynamodb",
    "function-url@dynamodb",
    "rest-api-domain@dynamodb",
]
"""Every door the SDKs discover through: the REST API on a custom domain mapped at the root, where their RFC 9728
fallback lands in the stage (through the `v1` stage itself they cannot: tests/emulator/test_oauth_discovery.py)."""


@pytest.mark.parametrize("stack", SDK_STACKS, indirect=True)
async def test_the_sdk_client_signs_in_through_the_front_door_and_calls_a_scoped_tool(stack: tuple[str, str]) -> None:
    _, mcp_url = stack
    user = HeadlessUser("dana")
    try:
        with anyio.fail_after(TEST_SECONDS):
            async with (
                httpx2.AsyncClient(auth=sdk_provider(mcp_url, user), timeout=httpx2.Timeout(20.0)) as http,
                Client(streamable_http_client(mcp_url, http_client=http), read_timeout_seconds=20) as client,
            ):
                results = [await client.call_tool("write_note", {"text": f"n{index}"}) for index in range(3)]
    finally:
        await user.aclose()
    assert [result.content[0].text for result in results] == [f"user-dana wrote n{index}" for index in range(3)]  # type: ignore[union-attr]
    assert user.sign_ins == 1


@pytest.mark.parametrize("stack", ["function-url@dynamodb+documents", "http-api@redis+documents"], indirect=True)
async def test_the_sdk_client_signs_in_with_a_client_id_metadata_document_through_the_door(
    stack: tuple[str, str], documents: tuple[Documents, str]
) -> None:
    """No registration: the containers fetch the host's document (through the address guard) and keep it in the
    stack's store, so whichever container serves the token request finds it."""
    _, mcp_url = stack
    served, _ = documents
    client_id = served.add(f"/clients/{uuid.uuid4().hex}.json")
    user = HeadlessUser("hana")
    provider = sdk_provider(mcp_url, user, client_metadata_url=client_id)
    fetched = served.fetches
    try:
        with anyio.fail_after(TEST_SECONDS):
            async with (
                httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(20.0)) as http,
                Client(streamable_http_client(mcp_url, http_client=http), read_timeout_seconds=20) as client,
            ):
                result = await client.call_tool("write_note", {"text": "by document"})
    finally:
        await user.aclose()
    assert result.content[0].text == "user-hana wrote by document"  # type: ignore[union-attr]
    assert served.fetches == fetched + 1


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("stack", ["function-url@dynamodb+documents", "http-api@redis+documents"], indirect=True)
async def test_the_older_python_sdk_and_the_typescript_sdk_use_a_client_id_metadata_document(
    stack: tuple[str, str], documents: tuple[Documents, str], client: str
) -> None:
    _, mcp_url = stack
    served, _ = documents
    client_id = served.add(f"/clients/{uuid.uuid4().hex}.json")
    with anyio.fail_after(TEST_SECONDS):
        signed_in = await run_sdk_client(client, mcp_url, "ivy", text="by document", client_metadata_url=client_id)
    assert signed_in.text == "user-ivy wrote by document" and signed_in.client_id == client_id


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("stack", SDK_STACKS, indirect=True)
async def test_the_older_python_sdk_and_the_typescript_sdk_sign_in_there_too(
    stack: tuple[str, str], client: str
) -> None:
    """Python SDK 1.30 and TypeScript SDK 1.32.2, each in its own process, the test playing the browser."""
    _, mcp_url = stack
    with anyio.fail_after(TEST_SECONDS):
        text = await sign_in_and_call(client, mcp_url, "gus", text=client)
    assert text == f"user-gus wrote {client}"


@pytest.mark.parametrize("stack", ["rest-api@redis", "rest-api@dynamodb"], indirect=True)
async def test_a_client_reading_the_401_body_signs_in_through_the_rest_apis_stage(stack: tuple[str, str]) -> None:
    _, mcp_url = stack
    base = mcp_url.removesuffix("/mcp")
    with anyio.fail_after(TEST_SECONDS):
        async with httpx.AsyncClient(timeout=20) as http:
            refused = await http.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401
            resource = (await http.get(refused.json()["error"]["data"]["resource_metadata"])).json()
            (issuer,) = resource["authorization_servers"]
            assert issuer == base
            server = (await http.get(f"{issuer}/.well-known/openid-configuration")).json()
            assert server["issuer"] == issuer and server["token_endpoint"] == f"{base}/token"
            client = (
                await http.post(
                    server["registration_endpoint"],
                    json={"redirect_uris": [HOST_REDIRECT], "token_endpoint_auth_method": "none"},
                )
            ).json()
            verifier = "v" * 64
            challenge = "w1TpKUdYE9hUAcNSeeSRFioHDxfUxuHho_JHAfZ_vDM"  # S256 of the verifier above
            parameters = {
                "response_type": "code",
                "client_id": client["client_id"],
                "redirect_uri": HOST_REDIRECT,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": resource["resource"],
                "scope": "notes:write",
                "state": "rest",
            }
            location = await browse_to_client(
                http, f"{server['authorization_endpoint']}?{urlencode(parameters)}", "erin"
            )
            code = redirect_result(location).code
            tokens = await http.post(
                server["token_endpoint"],
                data={
                    "grant_type": "authorization_code",
                    "client_id": client["client_id"],
                    "code": code,
                    "code_verifier": verifier,
                    "redirect_uri": HOST_REDIRECT,
                },
            )
            assert tokens.status_code == 200, tokens.text
        bearer = {"authorization": f"Bearer {tokens.json()['access_token']}"}
        async with httpx.AsyncClient(timeout=20, headers=bearer) as http:
            session = await initialize(http, mcp_url)
            called = await http.post(
                mcp_url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "write_note", "arguments": {"text": "via v1"}},
                },
                headers={**HEADERS, "mcp-session-id": session, "mcp-protocol-version": VERSION},
            )
    assert read_answer(called, 1)["result"]["content"] == [{"type": "text", "text": "user-erin wrote via v1"}]


@pytest.mark.parametrize("stack", ["function-url@redis"], indirect=True)
async def test_each_browser_gets_its_own_cookie_through_the_web_adapter(stack: tuple[str, str]) -> None:
    """The Web Adapter keeps no cookies between invocations: four browsers that never signed in, over two
    containers, each get a browser cookie of their own (a container that kept the first one's would send it with the
    next request, whose browser then never gets one, and its consent form is refused)."""
    _, mcp_url = stack
    base = mcp_url.removesuffix("/mcp")
    async with httpx.AsyncClient(timeout=20) as http:
        client = await http.post(
            f"{base}/register", json={"redirect_uris": [HOST_REDIRECT], "token_endpoint_auth_method": "none"}
        )
    parameters = {
        "response_type": "code",
        "client_id": client.json()["client_id"],
        "redirect_uri": HOST_REDIRECT,
        "code_challenge": "w1TpKUdYE9hUAcNSeeSRFioHDxfUxuHho_JHAfZ_vDM",
        "code_challenge_method": "S256",
    }
    cookies = []
    for _ in range(4):
        async with httpx.AsyncClient(timeout=20) as browser:
            page = await browser.get(f"{base}/authorize?{urlencode(parameters)}")
        assert page.status_code == 200
        cookies.append(page.headers.get("set-cookie", "").partition(";")[0])
    assert all(cookie.startswith("stratus-browser=") for cookie in cookies) and len(set(cookies)) == 4


async def test_stratus_local_sign_in_runs_a_provider_beside_the_stack_and_a_host_signs_in_through_the_front() -> None:
    """The documented local path (docs/deploy.md, "Sign-in locally"): `stratus local --sign-in` on the embedded
    store, nothing set by hand; the official SDK's client signs in from the MCP URL alone and calls a scoped tool."""
    oidc_provider_install()  # the provider's Node and package, as the command installs them on first use
    command_line = ("local", "--sign-in", "--parameter", "AuthScopes=notes:write")
    user = HeadlessUser("lee")
    with tempfile.TemporaryFile() as output:
        try:
            with stratus_process(APP, {}, command_line=command_line, output=output) as url:
                mcp_url = f"{url}/mcp"
                with anyio.fail_after(TEST_SECONDS):
                    async with (
                        httpx2.AsyncClient(auth=sdk_provider(mcp_url, user), timeout=httpx2.Timeout(20.0)) as http,
                        Client(streamable_http_client(mcp_url, http_client=http), read_timeout_seconds=20) as client,
                    ):
                        result = await client.call_tool("write_note", {"text": "from home"})
        finally:
            await user.aclose()
        output.seek(0)
        printed = output.read().decode()
    assert result.content[0].text == "user-lee wrote from home"  # type: ignore[union-attr]
    assert user.sign_ins == 1
    assert f"(any username signs in, no password); a host connecting to {mcp_url} signs in through the front" in printed


@pytest.mark.anyio(False)
@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--port", "0"], "--sign-in needs a fixed --port"),
        (["--parameter", "AuthUpstreamIssuer=https://idp.example"], "leave out --parameter AuthUpstreamIssuer"),
        (["--parameter", "OAuthFrontDoor=function-url"], "leave out --parameter OAuthFrontDoor"),
    ],
)
def test_stratus_local_sign_in_refuses_flags_it_cannot_serve_naming_the_flag(flags: list[str], named: str) -> None:
    ran = run_stratus(["local", "--sign-in", "--store", "memory://", "--app", APP, *flags], ROOT)
    assert ran.returncode == 2
    assert ran.stderr.startswith("stratus: ") and named in ran.stderr
