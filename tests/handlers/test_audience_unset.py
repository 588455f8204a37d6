"""The documented first deploy has no URL for AuthAudience yet (jwt and front modes): both functions start without
it, so that SnapStart's publication of the buffered function's version succeeds, and answer 503 naming it until a
deploy sets it. Then they serve."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import snapshot_restore_py

from stratus.handlers.deferred import ResolvedSettings
from stratus.handlers.secrets import settings_without_secrets
from stratus.handlers.streaming import adapter_app
from stratus.settings import AudienceUnsetError, Settings, SettingsError
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
from tests.fixtures.sample_server import server
from tests.fixtures.snapstart_runtime import snapstart_registries
from tests.fixtures.wire import BASE_HEADERS

AUDIENCE = "https://abc123.execute-api.us-east-1.amazonaws.com/mcp"


@pytest.fixture
def front_without_audience(monkeypatch: pytest.MonkeyPatch) -> None:
    """AuthMode=front as template.yaml sets it on a first deploy, with no AuthAudience."""
    for name, value in {
        "STRATUS_APP": "tests.fixtures.sample_server:server",
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_AUTH_MODE": "front",
        "STRATUS_AUTH_UPSTREAM_ISSUER": "https://idp.example.com",
        "STRATUS_AUTH_UPSTREAM_CLIENT_ID": "stratus",
        "STRATUS_AUTH_UPSTREAM_CLIENT_SECRET": "upstream-client-secret",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("STRATUS_AUTH_AUDIENCE", raising=False)


@pytest.fixture
def snapstart_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("AWS_LAMBDA_INITIALIZATION_TYPE", "snap-start")
    with snapstart_registries():
        yield


def _published_version() -> Any:
    """The buffered function's init and its snapshot hooks, as a version's publication runs them: none may raise."""
    module = importlib.reload(importlib.import_module("stratus.handlers.buffered"))
    for hook, args, kwargs in [*snapshot_restore_py.get_before_snapshot(), *snapshot_restore_py.get_after_restore()]:
        hook(*args, **kwargs)
    return module.handler


def _tools_list(handler: Any) -> dict[str, Any]:
    body, headers = stateless_request("tools/list", {})
    answer: dict[str, Any] = handler(event("http_api_v2", body, headers), LambdaContext())
    return answer


def test_a_snapshot_init_without_an_audience_publishes_and_answers_503_naming_it(
    front_without_audience: None, snapstart_runtime: None
) -> None:
    answer = _tools_list(_published_version())
    assert answer["statusCode"] == 503
    message = json.loads(answer["body"])["error"]["message"]
    assert "AuthAudience" in message and "STRATUS_AUTH_AUDIENCE" in message


def test_once_a_deploy_sets_the_audience_the_new_version_serves(
    front_without_audience: None, snapstart_runtime: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STRATUS_AUTH_AUDIENCE", AUDIENCE)
    answer = _tools_list(_published_version())
    assert answer["statusCode"] == 401  # the front asks for sign-in, pointing at its metadata under the audience
    assert "oauth-protected-resource" in answer["headers"]["www-authenticate"]


@pytest.mark.anyio
async def test_the_streaming_app_passes_readiness_and_answers_503_without_an_audience(
    front_without_audience: None,
) -> None:
    app = adapter_app(server, settings_without_secrets(), ResolvedSettings())
    body, headers = stateless_request("tools/list", {})
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        assert (await http.get("/health/live")).status_code == 200
        answer = await http.post("/mcp", json=body, headers={**BASE_HEADERS, **headers})
    assert answer.status_code == 503
    assert "AuthAudience" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    ("audience", "stage", "problem"),
    [
        (None, "", "STRATUS_AUTH_MODE=jwt needs STRATUS_AUTH_AUDIENCE"),
        ("abc", "", "STRATUS_AUTH_AUDIENCE='abc': must be an http(s) URL"),
        (AUDIENCE, "/v1", "STRATUS_AUTH_STAGE_PATH='/v1': must begin the path of STRATUS_AUTH_AUDIENCE"),
    ],
)
def test_an_audience_alone_wrong_is_deferrable_and_with_other_problems_is_not(
    audience: str | None, stage: str, problem: str
) -> None:
    jwt = {
        "STRATUS_AUTH_MODE": "jwt",
        "STRATUS_AUTH_ISSUER": "https://idp.example.com",
        "STRATUS_AUTH_STAGE_PATH": stage,
    }
    jwt |= {"STRATUS_AUTH_AUDIENCE": audience} if audience else {}
    with pytest.raises(AudienceUnsetError) as alone:
        Settings.from_env({**jwt, "STRATUS_AUTH_JWKS_URL": "https://idp.example.com/jwks"})
    assert alone.value.problems[0].startswith(problem)
    with pytest.raises(SettingsError) as more:
        Settings.from_env(jwt)
    assert (
        type(more.value) is SettingsError and problem in str(more.value) and "STRATUS_AUTH_JWKS_URL" in str(more.value)
    )
