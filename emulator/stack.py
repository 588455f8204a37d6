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

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stratus.emulator.event_config import EventInvokeConfig, event_invoke_configs
from stratus.emulator.iam import Role, stack_roles
from stratus.emulator.intrinsics import Resolver, TemplateError, api_id, parameter_values
from stratus.emulator.log_config import LogConfig, log_config
from stratus.emulator.sqs_mappings import QueueReader, dead_letter_queues, queue_readers
from stratus.emulator.stack_apis import HttpApi, RestApi, function_target, http_api, rest_api

DEFAULT_REGION = "us-east-1"
DEFAULT_STACK_NAME = "stratus-local"
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
        http_apis=tuple(http_api(resolver, logical_id) for logical_id in resolver.created("AWS::ApiGatewayV2::Api")),
        rest_apis=tuple(rest_api(resolver, logical_id) for logical_id in resolver.created("AWS::ApiGateway::RestApi")),
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


def _function_url(resolver: Resolver, logical_id: str) -> FunctionUrl:
    properties = resolver.properties(logical_id)
    function, qualifier = function_target(properties.get("TargetFunctionArn"))
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
    function, qualifier = function_target(properties.get("FunctionName"))
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
