"""The two defects the emulator found in template.yaml, pinned on the template as it was (before_fixes.yaml), and
the fixed template.yaml serving what they broke.

- The Function URL's `AuthType: !Ref FunctionUrlAuthType` made SAM generate neither public permission (it adds them
  only for a literal NONE), so with AuthType NONE every request got Lambda's 403.
- The HTTP API had no route for OAuth protected-resource discovery, so API Gateway answered its own 404.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from stratus.emulator.local_aws import LocalAws
from stratus.emulator.resource_policy import function_url_is_public
from stratus.emulator.stack import read_stack
from tests.fixtures.emulated_stack import BEFORE_FIXES, HEADERS, JWT_PARAMETERS, TEMPLATE, serving

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
WELL_KNOWN = ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp")
FUNCTION = "stratus-local-StreamingFunction"


@pytest.fixture(scope="module")
def before_fixes() -> Iterator[LocalAws]:
    # SnapStart off: its publish-time init would import the probe app from the old template's folder, which holds
    # no `tests` package; these pins never reach the function anyway.
    with serving(BEFORE_FIXES, parameters={**JWT_PARAMETERS, "SnapStart": "disabled"}) as aws:
        yield aws


@pytest.fixture(scope="module")
def fixed() -> Iterator[LocalAws]:
    with serving(TEMPLATE, parameters=JWT_PARAMETERS) as aws:
        yield aws


def test_the_function_url_is_public_only_in_the_fixed_template() -> None:
    """The resource policy SAM's translation leaves: before the fix, neither permission exists."""
    before = read_stack(BEFORE_FIXES)
    assert before.function_urls[0].auth_type == "NONE"
    assert [p.logical_id for p in before.policy(FUNCTION) if p.principal == "*"] == []
    assert not function_url_is_public(before.policy(FUNCTION), None)
    after = read_stack(TEMPLATE)
    assert function_url_is_public(after.policy(FUNCTION), None)
    signed_only = read_stack(TEMPLATE, {"FunctionUrlAuthType": "AWS_IAM"})
    assert [p.logical_id for p in signed_only.policy(FUNCTION) if p.principal == "*"] == []


async def test_defect_pinned_the_old_function_url_refuses_every_request(before_fixes: LocalAws) -> None:
    """Pins the defect on the old template: whatever the method or path, Lambda's own 403, nothing invoked."""
    url = before_fixes.url("StreamingFunctionUrl")
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        for method, path in [
            ("POST", "/mcp"),
            ("GET", "/mcp"),
            ("GET", "/health/live"),
            ("OPTIONS", "/mcp"),
            ("DELETE", "/session/x"),
            ("GET", "/"),
        ]:
            answer = await http.request(method, path, headers=HEADERS, content=b"{}" if method == "POST" else None)
            assert (answer.status_code, answer.json()) == (403, {"Message": "Forbidden"}), (method, path)
            assert answer.headers["x-amzn-errortype"] == "AccessDeniedException"
    assert before_fixes.pools[FUNCTION].served == []


async def test_defect_pinned_the_old_http_api_has_no_oauth_discovery_route(before_fixes: LocalAws) -> None:
    """Pins the defect on the old template: API Gateway's own 404 at both discovery paths, the function unasked."""
    async with httpx.AsyncClient(base_url=before_fixes.url("ServerlessHttpApi"), timeout=10) as http:
        for path in WELL_KNOWN:
            answer = await http.get(path)
            assert (answer.status_code, answer.json()) == (404, {"message": "Not Found"}), path
    assert before_fixes.pools["stratus-local-BufferedFunction"].served == []


async def test_the_fixed_function_url_reaches_the_function(fixed: LocalAws) -> None:
    """A request reaches the app (jwt mode: its own 401, with the discovery challenge intact on a Function URL)."""
    async with httpx.AsyncClient(base_url=fixed.url("StreamingFunctionUrl"), timeout=20) as http:
        answer = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=HEADERS)
    assert answer.status_code == 401
    assert "resource_metadata=" in answer.headers["www-authenticate"]
    assert len(fixed.pools[FUNCTION].served) == 1


async def test_the_fixed_http_api_serves_oauth_discovery(fixed: LocalAws) -> None:
    async with httpx.AsyncClient(base_url=fixed.url("ServerlessHttpApi"), timeout=20) as http:
        for path in WELL_KNOWN:
            answer = await http.get(path)
            assert answer.status_code == 200, (path, answer.text)
            assert answer.json()["authorization_servers"] == ["https://issuer.example"]


async def test_the_rest_api_remaps_the_bearer_challenge(fixed: LocalAws) -> None:
    """A REST proxy integration renames WWW-Authenticate: a client reading the standard header finds no challenge
    there (and must probe the well-known paths, which the REST API's {proxy+} serves)."""
    async with httpx.AsyncClient(base_url=fixed.url("StreamingRestApi"), timeout=20) as http:
        refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=HEADERS)
        assert refused.status_code == 401
        assert "www-authenticate" not in refused.headers
        assert "resource_metadata=" in refused.headers["x-amzn-remapped-www-authenticate"]
        assert (await http.get(WELL_KNOWN[1])).status_code == 200


async def test_with_the_rest_api_as_oauth_front_door_a_client_finds_the_metadata_inside_the_stage() -> None:
    """The REST API renames the challenge header, so a client reads `resource_metadata` from the 401's body; with
    OAuthFrontDoor=rest-api that URL lies inside the v1 stage, where the REST API routes it to the app."""
    parameters = {**JWT_PARAMETERS, "OAuthFrontDoor": "rest-api", "AuthAudience": "https://mcp.example/v1/mcp"}
    with serving(TEMPLATE, parameters=parameters, containers=1) as aws:
        async with httpx.AsyncClient(base_url=aws.url("StreamingRestApi"), timeout=20) as http:
            refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=HEADERS)
            assert refused.status_code == 401
            pointed = refused.json()["error"]["data"]["resource_metadata"]
            assert pointed == "https://mcp.example/v1/.well-known/oauth-protected-resource/mcp"
            metadata = await http.get(pointed.removeprefix("https://mcp.example/v1"))
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == "https://mcp.example/v1/mcp"
