"""The API Gateway APIs a translated template declares, as the emulator serves them: an HTTP API's routes (from its
OpenAPI body) and a REST API's methods, stages, custom-domain mappings and gateway responses (from its Swagger
body); and which function an integration URI names."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stratus.emulator.intrinsics import Resolver, api_id

FUNCTION_IN_URI = re.compile(r"function:([A-Za-z0-9_-]+)(?::([A-Za-z0-9$_-]+))?")
_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
ANY_METHOD = "x-amazon-apigateway-any-method"
INTEGRATION = "x-amazon-apigateway-integration"


@dataclass(frozen=True)
class Route:
    """An HTTP API route and its Lambda proxy integration."""

    method: str
    """Upper case, or ANY."""
    path: str
    """`/mcp`, `/session/{sessionId}`, `/{proxy+}`, or `$default`."""
    function: str
    qualifier: str | None = None
    payload_version: str = "2.0"
    timeout_ms: int = 30_000


@dataclass(frozen=True)
class HttpApi:
    logical_id: str
    api_id: str
    stage: str
    routes: tuple[Route, ...]
    cors: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RestMethod:
    """A REST API method on a resource: a Lambda proxy integration, or a mock one (SAM's CORS preflights)."""

    path: str
    method: str
    integration: str
    function: str | None = None
    qualifier: str | None = None
    streaming: bool = False
    timeout_ms: int = 29_000
    mock_status: int = 200
    mock_headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GatewayResponse:
    """A REST API's customised gateway response (`x-amazon-apigateway-gateway-responses`, which SAM's
    `GatewayResponses` writes): its status, if it sets one, its static headers and its body templates."""

    status: int | None
    headers: Mapping[str, str]
    templates: Mapping[str, str]


@dataclass(frozen=True)
class RestApi:
    logical_id: str
    api_id: str
    stages: tuple[str, ...]
    methods: tuple[RestMethod, ...]
    endpoint_type: str = "EDGE"
    stage: str = ""
    """The stage the template declares (the one its outputs name), among `stages`."""
    mappings: tuple[BasePathMapping, ...] = ()
    """The custom domains the API's stages are mapped on."""
    gateway_responses: Mapping[str, GatewayResponse] = field(default_factory=dict)
    """By response type (`INTEGRATION_FAILURE`, `DEFAULT_5XX`, ...)."""


@dataclass(frozen=True)
class BasePathMapping:
    """A stage of a REST API served on a custom domain, at a base path (empty: the domain's root)."""

    domain: str
    """The logical id of the `AWS::ApiGateway::DomainName`."""
    base_path: str
    stage: str


def function_target(uri: Any) -> tuple[str, str | None]:
    """The function name (and qualifier) an integration URI or a `FunctionName` names."""
    text = str(uri)
    match = FUNCTION_IN_URI.search(text)
    if match:
        return match.group(1), match.group(2)
    name, _, qualifier = text.partition(":")
    return name, qualifier or None


def http_api(resolver: Resolver, logical_id: str) -> HttpApi:
    properties = resolver.properties(logical_id)
    body = properties.get("Body") or {}
    routes: list[Route] = []
    for path, operations in (body.get("paths") or {}).items():
        for key, operation in operations.items():
            integration = operation.get(INTEGRATION) if isinstance(operation, dict) else None
            if not integration or key not in (*_HTTP_METHODS, ANY_METHOD):
                continue
            function, qualifier = function_target(integration.get("uri"))
            routes.append(
                Route(
                    method="ANY" if key == ANY_METHOD else key.upper(),
                    path="$default" if path in ("$default", "/$default") else path,
                    function=function,
                    qualifier=qualifier,
                    payload_version=str(integration.get("payloadFormatVersion", "2.0")),
                    # An HTTP API integration times out at 30 s at most (http-api-quotas).
                    timeout_ms=min(int(integration.get("timeoutInMillis", 30_000)), 30_000),
                )
            )
    stages = [
        str(resolver.properties(stage).get("StageName"))
        for stage in resolver.created("AWS::ApiGatewayV2::Stage")
        if resolver.properties(stage).get("ApiId") == api_id(logical_id)
    ]
    cors = body.get("x-amazon-apigateway-cors") or properties.get("CorsConfiguration")
    return HttpApi(logical_id, api_id(logical_id), stages[0] if stages else "$default", tuple(routes), cors)


def rest_api(resolver: Resolver, logical_id: str) -> RestApi:
    properties = resolver.properties(logical_id)
    body = properties.get("Body") or {}
    methods: list[RestMethod] = []
    for path, operations in (body.get("paths") or {}).items():
        for key, operation in operations.items():
            integration = operation.get(INTEGRATION) if isinstance(operation, dict) else None
            if not integration or key not in (*_HTTP_METHODS, ANY_METHOD):
                continue
            method = "ANY" if key == ANY_METHOD else key.upper()
            kind = str(integration.get("type", "")).lower()
            if kind == "mock":
                default = (integration.get("responses") or {}).get("default") or {}
                headers = {
                    name.removeprefix("method.response.header."): str(value).strip("'")
                    for name, value in (default.get("responseParameters") or {}).items()
                }
                methods.append(
                    RestMethod(
                        path, method, kind, mock_status=int(default.get("statusCode", 200)), mock_headers=headers
                    )
                )
                continue
            function, qualifier = function_target(integration.get("uri"))
            methods.append(
                RestMethod(
                    path,
                    method,
                    kind,
                    function=function,
                    qualifier=qualifier,
                    streaming=str(integration.get("responseTransferMode", "BUFFERED")).upper() == "STREAM",
                    timeout_ms=int(integration.get("timeoutInMillis", 29_000)),
                )
            )
    found: dict[str, list[str]] = {}
    for kind in ("AWS::ApiGateway::Stage", "AWS::ApiGateway::Deployment"):
        for resource in resolver.created(kind):
            stage = resolver.properties(resource)
            # A Deployment with a StageName creates that stage too (SAM's deployment names "Stage").
            if stage.get("RestApiId") == api_id(logical_id) and stage.get("StageName"):
                found.setdefault(kind, []).append(str(stage["StageName"]))
    declared = sorted(found.get("AWS::ApiGateway::Stage", [])) or sorted(found.get("AWS::ApiGateway::Deployment", []))
    stages = tuple(sorted({name for names in found.values() for name in names}))
    endpoint = ((properties.get("EndpointConfiguration") or {}).get("Types") or ["EDGE"])[0]
    mappings = []
    for mapping in resolver.created("AWS::ApiGateway::BasePathMapping"):
        mapped = resolver.properties(mapping)
        if mapped.get("RestApiId") != api_id(logical_id):
            continue
        # The mapping names the domain and the stage by their Refs: the logical id of the one, the name of the other.
        domain = _referenced(resolver, "AWS::ApiGateway::DomainName", mapped.get("DomainName"))
        stage_id = _referenced(resolver, "AWS::ApiGateway::Stage", mapped.get("Stage"))
        stage_name = str(resolver.properties(stage_id).get("StageName")) if stage_id else str(mapped.get("Stage"))
        base_path = "" if mapped.get("BasePath") in (None, "", "(none)") else str(mapped["BasePath"])
        mappings.append(BasePathMapping(domain or str(mapped.get("DomainName")), base_path, stage_name))
    return RestApi(
        logical_id,
        api_id(logical_id),
        stages,
        tuple(methods),
        str(endpoint),
        declared[0] if declared else "",
        tuple(mappings),
        _gateway_responses(body.get("x-amazon-apigateway-gateway-responses") or {}),
    )


def _gateway_responses(responses: Mapping[str, Any]) -> dict[str, GatewayResponse]:
    """The body's gateway responses; a header's value kept only when static (`'text'`), as API Gateway sends it."""
    found = {}
    for kind, response in responses.items():
        prefix = "gatewayresponse.header."
        headers = {
            name.removeprefix(prefix): str(value)[1:-1]
            for name, value in (response.get("responseParameters") or {}).items()
            if name.startswith(prefix) and len(str(value)) >= 2 and str(value)[0] == str(value)[-1] == "'"
        }
        status = response.get("statusCode")
        templates = {str(kind): str(text) for kind, text in (response.get("responseTemplates") or {}).items()}
        found[str(kind)] = GatewayResponse(int(status) if status is not None else None, headers, templates)
    return found


def _referenced(resolver: Resolver, kind: str, reference: Any) -> str | None:
    """The logical id of the resource of `kind` whose Ref is `reference`."""
    return next((found for found in resolver.created(kind) if resolver.resolve({"Ref": found}) == reference), None)
