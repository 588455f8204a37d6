"""SnapStart's publish-time init through `stratus local`: the buffered function (`SnapStart: ApplyOn:
PublishedVersions`, `AutoPublishAlias`) is initialised when the stack starts, as AWS initialises it when a deploy
publishes its version, and a template whose init would fail that publication (rolling the stack back) fails the
start with the reason. The documented first deploy, AuthMode=front without AuthAudience, starts, and serves once a
deploy sets it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import anyio
import httpx
import pytest

from stratus.emulator.local_aws import PublicationError
from stratus.emulator.stack import read_stack
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, serving
from tests.fixtures.moto_server import SerialMotoServer

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

FRONT = {"AuthMode": "front", "AuthUpstreamIssuer": "https://idp.example.com", "AuthUpstreamClientId": "stratus"}
CLIENT_SECRET = {"STRATUS_AUTH_UPSTREAM_CLIENT_SECRET": "upstream-client-secret"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.mark.parametrize(("snapstart", "published"), [("enabled", {"BufferedFunction"}), ("disabled", set())])
def test_only_a_function_with_snapstart_on_a_published_version_is_initialised_at_publication(
    snapstart: str, published: set[str]
) -> None:
    stack = read_stack(TEMPLATE, {"SnapStart": snapstart})
    assert {function.logical_id for function in stack.functions.values() if function.snapstart} == published


@pytest.fixture(scope="module")
def moto_ssm() -> Iterator[str]:
    """SSM on 127.0.0.1 (moto's), holding no parameter."""
    server = SerialMotoServer()
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("environment", "reason"),
    [
        ({"STRATUS_POLL_HOLD_SECONDS": "900"}, "STRATUS_POLL_HOLD_SECONDS=900.0: must be 0 or more and below"),
        ({"STRATUS_SECRET_KEY": "ssm:/stratus/never-created"}, "STRATUS_SECRET_KEY: cannot read the secret"),
    ],
    ids=["poll-hold-beyond-its-bound", "missing-ssm-parameter"],
)
def test_an_init_that_would_fail_publication_fails_the_start_with_the_reason(
    environment: Mapping[str, str], reason: str, moto_ssm: str
) -> None:
    environment = {**environment, "AWS_ENDPOINT_URL_SSM": moto_ssm}
    with pytest.raises(PublicationError) as failed, serving(TEMPLATE, environment=environment, store="dynamodb"):
        pass
    assert "BufferedFunction" in str(failed.value) and "SnapStart" in str(failed.value)
    assert reason in str(failed.value)


async def _tools_list(parameters: Mapping[str, str]) -> list[httpx.Response]:
    """A tools/list at the buffered function's HTTP API and at the streaming function's Function URL."""
    with serving(TEMPLATE, parameters=parameters, environment=CLIENT_SECRET, store="dynamodb") as stack:
        with anyio.fail_after(60):
            async with httpx.AsyncClient(timeout=30) as http:
                return [
                    await http.post(f"{stack.url(door)}/mcp", json=TOOLS_LIST, headers=HEADERS)
                    for door in ("ServerlessHttpApi", "StreamingFunctionUrl")
                ]


async def test_front_without_an_audience_starts_and_answers_503_naming_it_then_serves_once_set() -> None:
    for first in await _tools_list(FRONT):
        assert first.status_code == 503
        assert "AuthAudience" in first.json()["error"]["message"]

    for second in await _tools_list({**FRONT, "AuthAudience": "http://127.0.0.1:9/mcp"}):
        assert second.status_code == 401  # built: the front asks for sign-in
