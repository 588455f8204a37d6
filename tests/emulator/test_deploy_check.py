"""`stratus check-deploy` against `stratus local` itself: what it records there is the expectation a deployed stack
is set beside. An open stack's doors answer with a session and poll; a stack with `AuthMode=jwt` challenges at
every door, the REST API's challenge in `x-amzn-Remapped-WWW-Authenticate` as API Gateway renames it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from stratus.emulator.local_aws import LocalAws
from stratus.handlers.cli import main
from tests.fixtures.emulated_stack import DOORS as EMULATED_DOORS
from tests.fixtures.emulated_stack import TEMPLATE, free_ports, oauth_parameters, serving
from tests.fixtures.oidc_provider import cognito_standin

pytestmark = pytest.mark.uvicorn
DOORS = {"McpEndpoint": "ServerlessHttpApi", "StreamingMcpEndpoint": "StreamingFunctionUrl"}


def _endpoints(stack: LocalAws) -> list[str]:
    given = [f"{output}={stack.url(door)}/mcp" for output, door in DOORS.items()]
    return [*given, f"StreamingRestMcpEndpoint={stack.url('StreamingRestApi')}/mcp"]


def _check(stack: LocalAws, *flags: str) -> int:
    argv = ["check-deploy"]
    for endpoint in _endpoints(stack):
        argv += ["--endpoint", endpoint]
    return main([*argv, *flags])


@pytest.fixture(scope="module")
def open_stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE) as aws:
        yield aws


def test_an_open_stack_answers_and_polls_at_every_door_and_matches_its_own_record(
    open_stack: LocalAws, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "local.json"
    assert _check(open_stack, "--record", str(record)) == 0
    found = json.loads(record.read_text())
    for output in ("McpEndpoint", "StreamingMcpEndpoint", "StreamingRestMcpEndpoint"):
        assert found[f"{output} answers"] == "200 with a session"
        assert found[f"{output} challenge"] == "none"
    # On Lambda every door's GET stream is a poll: the HTTP API's buffered answer too.
    for output in ("McpEndpoint", "StreamingMcpEndpoint", "StreamingRestMcpEndpoint"):
        assert found[f"{output} poll"] == "ends at once with an event id and a retry"

    capsys.readouterr()
    assert _check(open_stack, "--expect", str(record)) == 0
    assert capsys.readouterr().out.count("  ok") == len(found)

    changed = {**found, "StreamingRestMcpEndpoint challenge": "x-amzn-Remapped-WWW-Authenticate"}
    record.write_text(json.dumps(changed))
    assert _check(open_stack, "--expect", str(record)) == 1
    printed = capsys.readouterr()
    assert "StreamingRestMcpEndpoint challenge" in printed.out and "DIFFERS" in printed.out
    assert "1 finding(s) differ" in printed.err


def test_a_jwt_stack_challenges_at_every_door_the_rest_api_s_renamed(tmp_path: Path) -> None:
    first = free_ports(4)
    parameters = oauth_parameters("http-api", "https://issuer.example", first)
    record = tmp_path / "local.json"
    with serving(TEMPLATE, parameters=parameters, port=first) as stack:
        assert _check(stack, "--record", str(record)) == 0
    found = json.loads(record.read_text())
    assert found["McpEndpoint answers"] == "401 with a challenge"
    assert found["McpEndpoint challenge"] == "WWW-Authenticate; body names resource_metadata"
    assert found["StreamingMcpEndpoint challenge"] == "WWW-Authenticate; body names resource_metadata"
    assert found["StreamingRestMcpEndpoint challenge"] == (
        "x-amzn-Remapped-WWW-Authenticate; body names resource_metadata"
    )
    assert found["StreamingRestMcpEndpoint poll"] == "not reached (401)"


def test_an_endpoint_not_named_as_an_output_is_refused_naming_the_outputs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-deploy", "--endpoint", "Mcp=http://127.0.0.1:1/mcp"]) == 2
    assert "McpEndpoint, StreamingMcpEndpoint, StreamingRestMcpEndpoint" in capsys.readouterr().err


def test_a_deployed_stack_s_endpoints_come_from_its_outputs(aws_credentials: None) -> None:
    """`--stack`: CloudFormation's DescribeStacks (moto), the three MCP outputs and nothing else."""
    import boto3
    from moto import mock_aws

    from stratus.handlers.deploy_check import stack_endpoints

    outputs = {
        "McpEndpoint": {"Value": "https://api.example/mcp"},
        "StreamingMcpEndpoint": {"Value": "https://url.example/mcp"},
        "HealthEndpoint": {"Value": "https://api.example/health"},
    }
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}, "Outputs": outputs}
    with mock_aws():
        boto3.client("cloudformation").create_stack(StackName="mcp", TemplateBody=json.dumps(template))
        assert stack_endpoints("mcp") == {
            "McpEndpoint": "https://api.example/mcp",
            "StreamingMcpEndpoint": "https://url.example/mcp",
        }


def test_a_front_stack_s_sign_in_through_the_rest_stream_keeps_its_cookies_and_redirects(tmp_path: Path) -> None:
    """With the REST API as the OAuth front door, the consent page's cookie comes through API Gateway's stream whole
    (allowing is honoured only with it), and so does the 302 to the provider."""
    first = free_ports(len(EMULATED_DOORS) + 1)
    base = f"http://127.0.0.1:{first + EMULATED_DOORS.index('StreamingRestApi')}/v1"
    record = tmp_path / "local.json"
    with cognito_standin(redirect_uris=[f"{base}/oauth/callback"]) as provider:
        parameters = {
            "AuthMode": "front",
            "AuthAudience": f"{base}/mcp",
            "AuthUpstreamIssuer": provider.issuer,
            "AuthUpstreamClientId": provider.client_id,
            "OAuthFrontDoor": "rest-api",
        }
        environment = {"STRATUS_AUTH_UPSTREAM_CLIENT_SECRET": provider.client_secret}
        with serving(TEMPLATE, parameters=parameters, port=first, environment=environment):
            endpoint = f"StreamingRestMcpEndpoint={base}/mcp"
            assert main(["check-deploy", "--endpoint", endpoint, "--record", str(record)]) == 0
    found = json.loads(record.read_text())
    assert found["StreamingRestMcpEndpoint challenge"] == (
        "x-amzn-Remapped-WWW-Authenticate; body names resource_metadata"
    )
    assert (
        found["StreamingRestMcpEndpoint sign-in"]
        == "consent page (1 cookie), then allowing with it: 302 to the provider"
    )
