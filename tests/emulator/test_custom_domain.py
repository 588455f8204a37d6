"""The streaming REST API on a custom domain, as template.yaml's translation deploys it: the domain and its base path
mapping exist only when asked for, and the OAuth challenge and the Web Adapter follow the base path, not the stage
(a custom domain's URL carries no stage)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from stratus.emulator.intrinsics import Resolver, parameter_values
from stratus.emulator.stack import load_template, read_stack, translate
from tests.fixtures.emulated_stack import JWT_PARAMETERS, TEMPLATE, serving

STREAMING = "stratus-local-StreamingFunction"
DOMAIN = {
    "RestApiDomainName": "mcp.example.com",
    "RestApiCertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d",
}
REST_OAUTH = {**JWT_PARAMETERS, "OAuthFrontDoor": "rest-api"}


def _resources(parameters: dict[str, str]) -> dict[str, Any]:
    """The resources CloudFormation creates, their properties resolved."""
    sam = load_template(TEMPLATE)
    resolver = Resolver(
        translate(sam, parameters, "us-east-1"),
        parameter_values(sam, parameters),
        stack_name="stratus-local",
        region="us-east-1",
    )
    return {
        logical_id: {**resource, "Resolved": resolver.resolve(resource.get("Properties") or {})}
        for logical_id, resource in resolver.resources.items()
        if resolver.exists(logical_id)
    }


def _environment(parameters: dict[str, str]) -> dict[str, str]:
    return dict(read_stack(TEMPLATE, parameters).functions[STREAMING].environment)


def test_without_a_domain_there_is_none_and_the_challenge_points_inside_the_v1_stage() -> None:
    resources = _resources(REST_OAUTH)
    assert not [r for r in resources.values() if r["Type"].startswith("AWS::ApiGateway::DomainName")]
    assert not [r for r in resources.values() if r["Type"] == "AWS::ApiGateway::BasePathMapping"]
    environment = _environment({**REST_OAUTH, "AuthAudience": "https://abc.example/v1/mcp"})
    assert environment["STRATUS_AUTH_STAGE_PATH"] == "/v1"
    assert "AWS_LWA_REMOVE_BASE_PATH" not in environment


@pytest.mark.parametrize(("base_path", "prefix"), [("tools", "/tools"), ("", None)])
def test_on_a_custom_domain_the_base_path_replaces_the_stage(base_path: str, prefix: str | None) -> None:
    parameters = {**REST_OAUTH, **DOMAIN, "RestApiBasePath": base_path}
    resources = _resources(parameters)
    (domain,) = [r["Resolved"] for r in resources.values() if r["Type"] == "AWS::ApiGateway::DomainName"]
    assert domain["DomainName"] == "mcp.example.com"
    assert domain["RegionalCertificateArn"] == DOMAIN["RestApiCertificateArn"]
    assert domain["EndpointConfiguration"] == {"Types": ["REGIONAL"]}
    (mapping,) = [r for r in resources.values() if r["Type"] == "AWS::ApiGateway::BasePathMapping"]
    assert mapping["Resolved"].get("BasePath") == (base_path or None)
    stage = resources[mapping["Properties"]["Stage"]["Ref"]]  # the stage SAM generates, which Ref names
    assert (stage["Type"], stage["Properties"]["StageName"]) == ("AWS::ApiGateway::Stage", "v1")

    environment = _environment(parameters)
    assert environment.get("STRATUS_AUTH_STAGE_PATH") == prefix
    assert environment.get("AWS_LWA_REMOVE_BASE_PATH") == prefix


def test_a_domain_for_another_oauth_front_door_leaves_the_challenge_alone() -> None:
    """The REST API may have a domain while the HTTP API is the OAuth front door: nothing prefixes its paths."""
    parameters = {**JWT_PARAMETERS, **DOMAIN, "RestApiBasePath": "tools"}
    environment = _environment(parameters)
    assert "STRATUS_AUTH_STAGE_PATH" not in environment
    assert environment["AWS_LWA_REMOVE_BASE_PATH"] == "/tools"  # the REST API's own paths still lose it


@pytest.mark.anyio
@pytest.mark.uvicorn
async def test_the_custom_domain_serves_the_stage_at_its_base_path_and_nothing_else() -> None:
    """The emulator serves the mapping as a door of its own (after the Lambda API): `/api/...` reaches the v1 stage,
    the Web Adapter removes the base path before the app sees it, and a path outside the base path is API Gateway's
    403, as is the stage's own name on the domain."""
    parameters = {**DOMAIN, "RestApiBasePath": "api"}
    with serving(TEMPLATE, parameters=parameters, containers=1) as aws:
        (domain,) = [door for door in aws.served if door.kind == "Custom domain"]
        assert domain.logical_id == "StreamingRestApiDomain" and domain.url.endswith("/api")
        origin = domain.url.removesuffix("/api")
        async with httpx.AsyncClient(timeout=20) as http:
            live = await http.get(f"{origin}/api/health/live")
            outside = await http.get(f"{origin}/health/live")
            staged = await http.get(f"{origin}/v1/health/live")
    assert live.status_code == 200 and live.json() == {"status": "ok"}
    assert outside.status_code == 403 and outside.json() == {"message": "Missing Authentication Token"}
    assert staged.status_code == 403
