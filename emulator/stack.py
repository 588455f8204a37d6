"""The stack a SAM template describes, as CloudFormation would create it: the template is run through the SAM
translator (the same translation `make template` checks; `scripts/translate_template.py`), then its parameters,
conditions and intrinsic functions are resolved, and what the emulator serves is read from the plain
CloudFormation resources that result: the Lambda functions, the HTTP APIs (routes from the translated OpenAPI
body), the REST APIs (resources from the Swagger body, and their stages), the Function URLs, and the
`AWS::Lambda::Permission` resources that make up each function's resource policy.

Reading the translated template rather than the SAM one is the point: what SAM generates (or, as with an
`AuthType` given by `!Ref`, does not generate) is what AWS deploys.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stratus.emulator.event_config import EventInvokeConfig, event_invoke_configs
from stratus.emulator.iam import Role, stack_roles
from stratus.emulator.intrinsics import Resolver, TemplateError, api_id, parameter_values
from stratus.emulator.log_config import LogConfig, log_config
from stratus.emulator.sqs_mappings import QueueReader, dead_letter_queues, queue_readers

DEFAULT_REGION = "us-east-1"
DEFAULT_STACK_NAME = "stratus-local"
_FUNCTION_IN_URI = re.compile(r"function:([A-Za-z0-9_-]+)(?::([A-Za-z0-9$_-]+))?")
_HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
ANY_METHOD = "x-amazon-apigateway-any-method"
INTEGRATION = "x-amazon-apigateway-integration"
WEB_ADAPTER_LAYER = ":layer:LambdaAdapterLayer"


@dataclass(frozen=True)
class Function:
    """A Lambda function as deployed: what a container needs to run it."""

    logical_id: str
    name: str
    arn: str
    handler: str
    runtime: str
    timeout_seconds: float
    memory_mb: int
    environment: Mapping[str, str]
    layers: tuple[str, ...]
    code_dir: Path
    reserved_concurrency: int | None = None
    """ReservedConcurrentExecutions: the most containers it may have at once (0: every invocation throttled)."""
    role: Role | None = None
    """Its execution role, when the stack creates it (one named by a literal ARN cannot be read, and is not checked)."""
    snapstart: bool = False
    """SnapStart on published versions (`SnapStart: ApplyOn: PublishedVersions`, a version published by SAM's
    AutoPublishAlias): its init runs when the version is published, and a failed init fails the publication."""
    durable: tuple[int, int] | None = None
    """`DurableConfig`: its execution timeout (seconds) and retention (days); None for a function that is not durable
    (https://docs.aws.amazon.com/lambda/latest/api/API_DurableConfig.html)."""
    logging: LogConfig = field(default_factory=LogConfig)
    """`LoggingConfig`: what its logs put into CloudWatch Logs (`log_config`)."""

    @property
    def behind_web_adapter(self) -> bool:
        """The Web Adapter layer runs the handler (`AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap`), as its README says."""
        return self.environment.get("AWS_LAMBDA_EXEC_WRAPPER") == "/opt/bootstrap" and any(
            WEB_ADAPTER_LAYER in layer for layer in self.layers
        )


@dataclass(frozen=True)
class Permission:
    """One statement of a function's resource-based policy (an `AWS::Lambda::Permission`)."""

    logical_id: str
    action: str
    principal: str
    function: str
    qualifier: str | None = None
    source_arn: str | None = None
    function_url_auth_type: str | None = None
    invoked_via_function_url: bool = False


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


@dataclass(frozen=True)
class FunctionUrl:
    logical_id: str
    url_id: str
    function: str
    qualifier: str | None
    auth_type: str
    invoke_mode: str
    cors: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Stack:
    """What a deployed stack serves, read from its translated template."""

    region: str
    functions: Mapping[str, Function]
    """By function name."""
    http_apis: tuple[HttpApi, ...]
    rest_apis: tuple[RestApi, ...]
    function_urls: tuple[FunctionUrl, ...]
    permissions: tuple[Permission, ...]
    event_configs: Mapping[str, EventInvokeConfig] = field(default_factory=dict)
    """By function name: the asynchronous invocation settings of those that have any."""
    dead_letter_queues: Mapping[str, str] = field(default_factory=dict)
    """By function name: the dead-letter queue's ARN of those that have one."""
    queue_readers: Mapping[str, QueueReader] = field(default_factory=dict)
    """By queue ARN: the SQS event source mappings."""

    def policy(self, function: str) -> tuple[Permission, ...]:
        """The statements of `function`'s resource-based policy."""
        return tuple(permission for permission in self.permissions if permission.function == function)


def load_template(path: Path) -> dict[str, Any]:
    """The SAM template at `path`, its short-form intrinsics (`!Ref`) read as CloudFormation reads them."""
    from samtranslator.yaml_helper import yaml_parse

    parsed: Any = yaml_parse(path.read_text(encoding="utf-8"))
    if not isinstance(parsed, dict) or not isinstance(parsed.get("Resources"), dict):
        raise TemplateError(f"{path} is not a CloudFormation template (no Resources)")
    return parsed


def translate(sam_template: dict[str, Any], parameters: Mapping[str, str], region: str) -> dict[str, Any]:
    """The SAM translator's CloudFormation for `sam_template` (local `CodeUri`s replaced by an S3 placeholder, as
    `sam package` replaces them; no managed policies are looked up).

    Raises:
        TemplateError: the translator refuses the template (its own message says why).
    """
    import boto3
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    for resource in sam_template["Resources"].values():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource.setdefault("Properties", {})["CodeUri"] = "s3://packaged/code.zip"
    translator = Translator({}, Parser(), boto_session=boto3.session.Session(region_name=region))
    try:
        translated: dict[str, Any] = translator.translate(
            sam_template, parameter_values=dict(parameters), get_managed_policy_map=dict
        )
    except InvalidDocumentException as error:
        causes = "; ".join(str(cause) for cause in error.causes)
        raise TemplateError(f"the SAM translator refused the template: {causes}") from None
    return translated


def read_stack(
    path: Path,
    overrides: Mapping[str, str] | None = None,
    *,
    region: str = DEFAULT_REGION,
    stack_name: str = DEFAULT_STACK_NAME,
) -> Stack:
    """The stack `path` describes, with `overrides` for its parameters.

    Raises:
        TemplateError: the template cannot be read, translated or resolved.
    """
    sam_template = load_template(path)
    code_dirs = _code_dirs(sam_template, path.parent)
    values = parameter_values(sam_template, overrides or {})
    translated = translate(sam_template, dict(overrides or {}), region)
    resolver = Resolver(translated, values, stack_name=stack_name, region=region)
    roles = stack_roles(resolver)
    functions = {
        function.name: function
        for function in (
            _function(resolver, logical_id, code_dirs.get(logical_id, path.parent), roles)
            for logical_id in resolver.created("AWS::Lambda::Function")
        )
    }
    return Stack(
        region=region,
        functions=functions,
        http_apis=tuple(_http_api(resolver, logical_id) for logical_id in resolver.created("AWS::ApiGatewayV2::Api")),
        rest_apis=tuple(_rest_api(resolver, logical_id) for logical_id in resolver.created("AWS::ApiGateway::RestApi")),
        function_urls=tuple(_function_url(resolver, logical_id) for logical_id in resolver.created("AWS::Lambda::Url")),
        permissions=tuple(
            _permission(resolver, logical_id) for logical_id in resolver.created("AWS::Lambda::Permission")
        ),
        event_configs=event_invoke_configs(resolver),
        dead_letter_queues=dead_letter_queues(resolver),
        queue_readers=queue_readers(resolver),
    )


def _code_dirs(sam_template: Mapping[str, Any], base: Path) -> dict[str, Path]:
    """Each function's local code directory (`CodeUri`, relative to the template), before the translator replaces it."""
    globals_uri = ((sam_template.get("Globals") or {}).get("Function") or {}).get("CodeUri")
    found: dict[str, Path] = {}
    for logical_id, resource in sam_template["Resources"].items():
        if resource.get("Type") == "AWS::Serverless::Function":
            uri = (resource.get("Properties") or {}).get("CodeUri", globals_uri)
            found[logical_id] = (base / uri).resolve() if isinstance(uri, str) and "://" not in uri else base
    return found


def _function(resolver: Resolver, logical_id: str, code_dir: Path, roles: Mapping[str, Role]) -> Function:
    properties = resolver.properties(logical_id)
    name = str(resolver.ref(logical_id))
    variables = (properties.get("Environment") or {}).get("Variables") or {}
    return Function(
        logical_id=logical_id,
        name=name,
        arn=resolver.function_arn(name),
        handler=str(properties.get("Handler", "")),
        runtime=str(properties.get("Runtime", "")),
        # Defaults of AWS::Lambda::Function: 3 s, 128 MB.
        timeout_seconds=float(properties.get("Timeout", 3)),
        memory_mb=int(properties.get("MemorySize", 128)),
        environment={key: str(value) for key, value in variables.items()},
        layers=tuple(str(layer) for layer in properties.get("Layers") or ()),
        code_dir=code_dir,
        # https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
        reserved_concurrency=(
            int(properties["ReservedConcurrentExecutions"])
            if properties.get("ReservedConcurrentExecutions") is not None
            else None
        ),
        role=roles.get(str(properties.get("Role", ""))),
        durable=_durable(properties.get("DurableConfig")),
        logging=log_config(properties.get("LoggingConfig")),
        # SnapStart applies to published versions only: AutoPublishAlias's AWS::Lambda::Version publishes one.
        snapstart=(properties.get("SnapStart") or {}).get("ApplyOn") == "PublishedVersions"
        and any(
            str(resolver.properties(version).get("FunctionName")) == name
            for version in resolver.created("AWS::Lambda::Version")
        ),
    )


def _durable(config: Any) -> tuple[int, int] | None:
    if not isinstance(config, dict):
        return None
    return int(config.get("ExecutionTimeout", 86_400)), int(config.get("RetentionPeriodInDays", 14))


def _target(uri: Any) -> tuple[str, str | None]:
    """The function name (and qualifier) an integration URI or a `FunctionName` names."""
    text = str(uri)
    match = _FUNCTION_IN_URI.search(text)
    if match:
        return match.group(1), match.group(2)
    name, _, qualifier = text.partition(":")
    return name, qualifier or None


def _http_api(resolver: Resolver, logical_id: str) -> HttpApi:
    properties = resolver.properties(logical_id)
    body = properties.get("Body") or {}
    routes: list[Route] = []
    for path, operations in (body.get("paths") or {}).items():
        for key, operation in operations.items():
            integration = operation.get(INTEGRATION) if isinstance(operation, dict) else None
            if not integration or key not in (*_HTTP_METHODS, ANY_METHOD):
                continue
            function, qualifier = _target(integration.get("uri"))
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


def _rest_api(resolver: Resolver, logical_id: str) -> RestApi:
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
            function, qualifier = _target(integration.get("uri"))
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


def _function_url(resolver: Resolver, logical_id: str) -> FunctionUrl:
    properties = resolver.properties(logical_id)
    function, qualifier = _target(properties.get("TargetFunctionArn"))
    auth_type = properties.get("AuthType")
    if not isinstance(auth_type, str):
        raise TemplateError(f"{logical_id}: AuthType does not resolve to a string")
    return FunctionUrl(
        logical_id=logical_id,
        url_id=api_id(logical_id),
        function=function,
        qualifier=properties.get("Qualifier") or qualifier,
        auth_type=auth_type,
        invoke_mode=str(properties.get("InvokeMode", "BUFFERED")),
        cors=properties.get("Cors"),
    )


def _permission(resolver: Resolver, logical_id: str) -> Permission:
    properties = resolver.properties(logical_id)
    function, qualifier = _target(properties.get("FunctionName"))
    invoked_via_url = properties.get("InvokedViaFunctionUrl")
    return Permission(
        logical_id=logical_id,
        action=str(properties.get("Action", "")),
        principal=str(properties.get("Principal", "")),
        function=function,
        qualifier=qualifier,
        source_arn=properties.get("SourceArn"),
        function_url_auth_type=properties.get("FunctionUrlAuthType"),
        invoked_via_function_url=invoked_via_url is True or str(invoked_via_url).lower() == "true",
    )
