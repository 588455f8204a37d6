"""OAuth discovery end to end through the emulated stack, for each value of OAuthFrontDoor: a client that starts with
only the door's MCP URL finds the authorization server on its own (the 401's challenge, or where API Gateway moved
it, or the RFC 9728 well-known URLs), gets a token from it (an authorization server on 127.0.0.1: RFC 8414 metadata,
JWKS, client_credentials) and calls a tool. Two containers per function, AuthMode=jwt, AuthAudience the door's URL.

- the HTTP API and the Function URL: the official SDK's OAuth client, in both eras, and the explicit client, both
  from the `WWW-Authenticate` challenge;
- the same two with `remap_www_authenticate` (`door+remapped`: they rename the challenge header as the REST API
  does, which is reported on AWS though not documented): the explicit client finds the metadata through
  `x-amzn-Remapped-WWW-Authenticate` or the 401 body, and the SDK's client, which reads neither, through the RFC 9728
  well-known URL of the MCP path (the HTTP API routes it, the Function URL sends every path to the function);
- the REST API: its proxy integration renames the challenge header to `x-amzn-Remapped-WWW-Authenticate`, and the
  RFC 9728 well-known URLs of `/v1/mcp` lie outside the `v1` stage (API Gateway's own 403), so the explicit client
  finds the metadata through the header's new name or the 401 body's `resource_metadata`. The SDK's client reads
  neither: through the stage it cannot discover (pinned below; a custom domain mapped at the root avoids the stage).
- before_fixes.yaml (the template before the discovery routes and Function URL permissions): discovery fails at the
  HTTP API (its 404 at the metadata URL and both fallbacks) and at the Function URL (Lambda's 403 to the first POST).
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.auth import OAuthFlowError
from mcp.client.streamable_http import streamable_http_client

from stratus.emulator.local_aws import LocalAws
from tests.fixtures.emulated_stack import (
    BEFORE_FIXES,
    DOORS,
    OAUTH_FRONT_DOORS,
    TEMPLATE,
    call_tool,
    free_ports,
    initialize,
    oauth_parameters,
    serving,
)
from tests.fixtures.jwt_issuer import CLIENT_ID, CLIENT_SECRET, Issuer, authorization_server
from tests.fixtures.oauth_discovery import DiscoveryError, discover_and_authorize, sdk_oauth_client

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
TEST_SECONDS = 60
ERAS = {"2026-07-28": "auto", "2025-11-25": "legacy"}
REMAPPED = ("http-api+remapped", "function-url+remapped")
"""The HTTP API and the Function URL served with `remap_www_authenticate`: they rename the challenge header too."""


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with authorization_server() as server:
        yield server


@pytest.fixture(scope="module")
def stack(request: pytest.FixtureRequest, issuer: Issuer) -> Iterator[tuple[str, LocalAws]]:
    """The stack with `OAuthFrontDoor` set to the param's door; `door@dynamodb` keeps its state in DynamoDB on
    moto (the default is the real Redis); `door+remapped` serves it with `remap_www_authenticate`."""
    spec, _, option = str(request.param).partition("+")
    front_door, _, store = spec.partition("@")
    first = free_ports(len(DOORS) + 1)  # each door, then the emulated Lambda API
    parameters = oauth_parameters(front_door, issuer.url, first)
    with serving(
        TEMPLATE,
        parameters=parameters,
        containers=2,
        port=first,
        store=store or "redis",
        remap_www_authenticate=option == "remapped",
    ) as aws:
        yield front_door, aws


def _mcp_url(front_door: str, aws: LocalAws) -> str:
    return f"{aws.url(OAUTH_FRONT_DOORS[front_door])}/mcp"


def _challenge_header(front_door: str, aws: LocalAws) -> str:
    """The name the door answers the challenge under: renamed at the REST API always, elsewhere when asked to."""
    renamed = front_door == "rest-api" or aws.options.remap_www_authenticate
    return "x-amzn-Remapped-WWW-Authenticate" if renamed else "WWW-Authenticate"


@pytest.mark.parametrize(
    "stack",
    [*OAUTH_FRONT_DOORS, "function-url@dynamodb", "rest-api@dynamodb", *REMAPPED],
    indirect=True,
)
async def test_a_client_with_only_the_mcp_url_discovers_gets_a_token_and_calls_a_tool(
    stack: tuple[str, LocalAws], issuer: Issuer
) -> None:
    front_door, aws = stack
    url = _mcp_url(front_door, aws)
    with anyio.fail_after(TEST_SECONDS):
        async with httpx.AsyncClient(timeout=20) as http:
            found = await discover_and_authorize(http, url, CLIENT_ID, CLIENT_SECRET)
        assert found.found_via == _challenge_header(front_door, aws), found.steps
        assert found.authorization_server == issuer.url
        assert found.metadata_url.startswith(url.removesuffix("/mcp"))  # inside the stage, on the REST API
        bearer = {"authorization": f"Bearer {found.access_token}"}
        async with httpx.AsyncClient(timeout=20, headers=bearer) as http:
            session = await initialize(http, url)
            result, _ = await call_tool(http, url, session, "add", {"a": 2, "b": 3})
    assert result == 5


@pytest.mark.parametrize("stack", [*OAUTH_FRONT_DOORS, *REMAPPED], indirect=True)
async def test_the_401_names_the_metadata_under_one_header_name_and_in_its_body(stack: tuple[str, LocalAws]) -> None:
    """The challenge arrives under one name only (renamed at the REST API, and at the others with
    `remap_www_authenticate`), and a client that knows neither name still finds `resource_metadata` in the body
    (inside the stage, on the REST API)."""
    front_door, aws = stack
    url = _mcp_url(front_door, aws)
    async with httpx.AsyncClient(timeout=20) as http:
        refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        pointed = refused.json()["error"]["data"]["resource_metadata"]
        metadata = await http.get(pointed)
    challenges = {name: value for name, value in refused.headers.items() if name.endswith("www-authenticate")}
    assert challenges == {_challenge_header(front_door, aws).lower(): f'Bearer resource_metadata="{pointed}"'}
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == url


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("stack", ["http-api", "function-url", *REMAPPED], indirect=True)
async def test_the_sdk_oauth_client_discovers_and_calls_a_tool(
    stack: tuple[str, LocalAws], issuer: Issuer, era: str
) -> None:
    front_door, aws = stack
    url = _mcp_url(front_door, aws)
    asked = issuer.requests
    with anyio.fail_after(TEST_SECONDS):
        async with (
            sdk_oauth_client(url, issuer.url, CLIENT_ID, CLIENT_SECRET) as http,
            Client(streamable_http_client(url, http_client=http), mode=ERAS[era], read_timeout_seconds=20) as client,
        ):
            assert client.protocol_version == era
            result = await client.call_tool("add", {"a": 4, "b": 5})
    assert result.structured_content == {"result": 9}
    assert issuer.requests == asked + 1  # one token, from the server discovery led to


@pytest.mark.parametrize("stack", ["rest-api"], indirect=True)
async def test_pinned_the_sdk_oauth_client_cannot_discover_through_the_rest_apis_stage(
    stack: tuple[str, LocalAws], issuer: Issuer
) -> None:
    """Pins a limitation, not a wish: the SDK takes `resource_metadata` only from `WWW-Authenticate`, which the REST
    API renames, and its well-known fallbacks (`/.well-known/oauth-protected-resource/v1/mcp`, then the root form)
    lie outside the stage, where API Gateway answers 403 itself. No token is ever asked for."""
    front_door, aws = stack
    url = _mcp_url(front_door, aws)
    asked = issuer.requests
    with anyio.fail_after(TEST_SECONDS), pytest.raises(Exception) as failed:
        async with (
            sdk_oauth_client(url, issuer.url, CLIENT_ID, CLIENT_SECRET) as http,
            Client(streamable_http_client(url, http_client=http), mode="legacy", read_timeout_seconds=20) as client,
        ):
            await client.list_tools()
    assert _has(failed.value, OAuthFlowError), repr(failed.value)
    assert issuer.requests == asked


def _has(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether `error`, or an exception grouped or chained inside it, is a `kind`."""
    if isinstance(error, kind):
        return True
    inner = list(error.exceptions) if isinstance(error, BaseExceptionGroup) else []
    inner += [cause for cause in (error.__cause__, error.__context__) if cause is not None]
    return any(_has(each, kind) for each in inner)


@pytest.mark.parametrize("front_door", ["http-api", "function-url"])
async def test_defect_pinned_before_the_fixes_discovery_fails(front_door: str, issuer: Issuer) -> None:
    """The template as it was: the same client, from the same URL, stops before any token is asked for."""
    first = free_ports(len(DOORS) + 1)
    parameters = oauth_parameters(front_door, issuer.url, first)
    del parameters["OAuthFrontDoor"]  # the old template has no such parameter
    asked = issuer.requests
    # The old template's CodeUri is its own folder: the test app is found from the repository's root.
    code = {"PYTHONPATH": str(TEMPLATE.parent)}
    with serving(BEFORE_FIXES, parameters=parameters, containers=2, port=first, environment=code) as aws:
        url = _mcp_url(front_door, aws)
        async with httpx.AsyncClient(timeout=20) as http:
            with pytest.raises(DiscoveryError) as failed:
                await discover_and_authorize(http, url, CLIENT_ID, CLIENT_SECRET)
    if front_door == "http-api":  # the challenge names the metadata, which the API does not route: its own 404s
        base = url.removesuffix("/mcp")
        assert str(failed.value) == (
            f"POST {url}: 401; GET {base}/.well-known/oauth-protected-resource/mcp (WWW-Authenticate): 404; "
            f"GET {base}/.well-known/oauth-protected-resource (well-known): 404; no protected-resource metadata"
        )
    else:  # Lambda's 403 to every request: no challenge at all
        assert str(failed.value) == f"POST {url}: 403; no 401 challenge"
    assert issuer.requests == asked
