"""template.yaml and the code agree: the handler it names exists, and its table is the one the store creates."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from stratus import McpServer, Settings, build_app
from stratus.stores.dynamodb.schema import table_definition
from tests.fixtures.keys import SECRET_KEY

TEMPLATE_PATH = Path(__file__).parent.parent / "template.yaml"
TEMPLATE = TEMPLATE_PATH.read_text(encoding="utf-8")


def test_the_handlers_named_in_the_template_exist() -> None:
    assert re.findall(r"Handler: (\S+)", TEMPLATE) == [
        "stratus.handlers.buffered.handler",
        "run.sh",
        "stratus.handlers.sweeper.handler",
        "stratus.handlers.task_worker.handler",
        "stratus.handlers.durable_worker.handler",
    ]
    assert (
        (Path(__file__).parent.parent / "run.sh")
        .read_text(encoding="utf-8")
        .strip()
        .endswith("exec python -m stratus.handlers.streaming")
    )


def test_the_streaming_function_streams_through_the_web_adapter() -> None:
    for setting in (
        "AWS_LAMBDA_EXEC_WRAPPER: /opt/bootstrap",
        "AWS_LWA_INVOKE_MODE: response_stream",
        "AWS_LWA_READINESS_CHECK_PATH: /health/live",
        "InvokeMode: RESPONSE_STREAM",
    ):
        assert setting in TEMPLATE


def test_only_the_function_behind_the_web_adapter_trusts_its_request_context_header() -> None:
    resources = _parsed_template()["Resources"]
    trusting = {
        name
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Serverless::Function"
        and "STRATUS_TRUST_REQUEST_CONTEXT_HEADER" in resource["Properties"].get("Environment", {}).get("Variables", {})
    }
    assert trusting == {"StreamingFunction"}
    streaming = resources["StreamingFunction"]["Properties"]["Environment"]["Variables"]
    assert (streaming["STRATUS_TRUST_REQUEST_CONTEXT_HEADER"], streaming["AWS_LAMBDA_EXEC_WRAPPER"]) == (
        "true",
        "/opt/bootstrap",
    )
    assert "STRATUS_TRUST_REQUEST_CONTEXT_HEADER" not in _environment()


def test_the_template_table_has_the_store_key_schema_and_ttl() -> None:
    definition = table_definition("t")
    for attribute in definition["AttributeDefinitions"]:
        assert (
            f"AttributeName: {attribute['AttributeName']}\n          AttributeType: {attribute['AttributeType']}"
            in TEMPLATE
        )
    for key in definition["KeySchema"]:
        assert f"AttributeName: {key['AttributeName']}\n          KeyType: {key['KeyType']}" in TEMPLATE
    assert f"BillingMode: {definition['BillingMode']}" in TEMPLATE
    assert "TimeToLiveSpecification:\n        AttributeName: expires\n        Enabled: true" in TEMPLATE


def _parsed_template() -> dict[str, Any]:
    import yaml

    class CloudFormationLoader(yaml.SafeLoader):
        pass

    def any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> object:
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        return loader.construct_mapping(node)  # type: ignore[arg-type]

    CloudFormationLoader.add_multi_constructor("!", any_tag)
    parsed: dict[str, Any] = yaml.load(TEMPLATE, Loader=CloudFormationLoader)
    return parsed


def test_the_template_is_well_formed_yaml_with_every_referenced_resource_defined() -> None:
    template = _parsed_template()
    resources = set(template["Resources"])
    parameters = set(template["Parameters"])
    for name in re.findall(r"!(?:Ref|GetAtt) (?!AWS::)(\w+)", TEMPLATE):  # AWS::* are pseudo parameters
        assert name in resources | parameters, name
    assert {"BufferedFunction", "StreamingFunction", "StateTable"} <= resources


FRONT_SETTINGS = Settings(
    auth_mode="front",
    auth_audience="https://mcp.example.com/mcp",
    auth_upstream_issuer="https://idp.example.com",
    auth_upstream_client_id="stratus",
    auth_upstream_client_secret="secret",
)
"""Every route the app serves is there with the authorization front on."""


def test_the_http_api_routes_every_path_the_app_serves_with_any_method_so_preflights_reach_it() -> None:
    template = _parsed_template()
    events = template["Resources"]["BufferedFunction"]["Properties"]["Events"]
    routes = {(event["Properties"]["Path"], event["Properties"]["Method"]) for event in events.values()}
    assert routes == {
        (path, "ANY")
        for path in (
            "/mcp",
            "/session",
            "/session/{sessionId}",
            "/session/{sessionId}/responses",
            "/events/{sessionId}",
            "/health",
            "/health/live",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server",
            "/.well-known/openid-configuration",
            "/authorize",
            "/token",
            "/register",
            "/revoke",
            "/oauth/{page}",
        )
    }
    front = build_app(McpServer("front"), FRONT_SETTINGS).routes
    patterns = [re.compile(re.sub(r"\\{\w+\\}", "[^/]+", re.escape(path)) + "$") for path, _ in routes]
    assert [path for path in front if not any(pattern.match(path) for pattern in patterns)] == []
    # The app answers preflights (core/transport/cors.py): no CorsConfiguration makes API Gateway answer them.
    http_apis = [r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::HttpApi"]
    assert all("CorsConfiguration" not in api.get("Properties", {}) for api in http_apis)
    assert "HttpApi" not in template["Globals"]


def test_the_buffered_function_uses_snapstart_on_a_published_alias_unless_turned_off() -> None:
    template = _parsed_template()
    buffered = template["Resources"]["BufferedFunction"]["Properties"]
    assert buffered["AutoPublishAlias"] == "live"
    assert buffered["SnapStart"]["ApplyOn"] == ["UseSnapStart", "PublishedVersions", "None"]
    assert template["Parameters"]["SnapStart"]["Default"] == "enabled"
    assert "SnapStart" not in template["Resources"]["StreamingFunction"]["Properties"]


def test_samconfig_overrides_name_template_parameters() -> None:
    import tomllib

    samconfig = tomllib.loads((Path(__file__).parent.parent / "samconfig.toml").read_text(encoding="utf-8"))
    overrides = samconfig["default"]["deploy"]["parameters"]["parameter_overrides"]
    named = {override.split("=", 1)[0] for override in overrides}
    assert named <= set(_parsed_template()["Parameters"])


def _granted(function: str) -> list[dict[str, Any]]:
    """The statements of `function`'s execution role: its inline policies and the stack's managed ones it attaches."""
    resources = _parsed_template()["Resources"]
    role = resources[resources[function]["Properties"]["Role"].removesuffix(".Arn")]["Properties"]
    documents = [policy["PolicyDocument"] for policy in role.get("Policies", [])]
    documents += [
        resources[arn]["Properties"]["PolicyDocument"]
        for arn in role["ManagedPolicyArns"]
        if isinstance(arn, str) and resources.get(arn, {}).get("Type") == "AWS::IAM::ManagedPolicy"
    ]
    return [statement for document in documents for statement in document["Statement"]]


@pytest.mark.parametrize(("subnets", "attached"), [("", False), ("subnet-1,subnet-2", True)])
def test_only_a_stack_in_a_vpc_grants_its_functions_network_interfaces(subnets: str, attached: bool) -> None:
    """SAM's generated roles got AWSLambdaVPCAccessExecutionRole whatever VpcSubnetIds said (it counts the Globals'
    `!If [InVpc, ...]` as a VpcConfig); the stack's own roles attach it only in a VPC."""
    from stratus.emulator.stack import read_stack

    stack = read_stack(TEMPLATE_PATH, {"VpcSubnetIds": subnets, "VpcSecurityGroupIds": "sg-1" if subnets else ""})
    for function in stack.functions.values():
        assert function.role is not None, function.logical_id
        vpc = [arn for arn in function.role.managed_policies if arn.endswith("/AWSLambdaVPCAccessExecutionRole")]
        assert bool(vpc) is attached, function.logical_id


def test_iam_is_least_privilege_and_grants_every_dynamodb_call_the_stores_make() -> None:
    stores = Path(__file__).parent.parent / "core" / "stores"
    used = {
        "dynamodb:" + "".join(part.title() for part in name.split("_"))
        for source in (stores / "dynamodb").glob("*.py")
        for name in re.findall(r'\bcall\(\s*"([a-z_]+)"', source.read_text(encoding="utf-8"))
        + re.findall(r'"(put_item|update_item)" if', source.read_text(encoding="utf-8"))
        + re.findall(r"self\.client\.([a-z_]+)\b", source.read_text(encoding="utf-8"))
        if name not in ("transact_write_items", "meta")  # a transaction is authorised per item (below)
    }
    assert {"dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:BatchWriteItem"} <= used
    for function in ("BufferedFunction", "StreamingFunction", "SweeperFunction", "TaskWorkerFunction"):
        for statement in _granted(function):
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert not any("*" in action for action in actions), (function, actions)
            if any(action.startswith("dynamodb:") for action in actions):
                assert statement["Resource"] == "StateTable.Arn", function  # the table, not "*"
    # The sweeper calls a few of them: it is granted exactly those (the test below).
    for function in ("BufferedFunction", "StreamingFunction", "TaskWorkerFunction"):
        granted = {action for statement in _granted(function) for action in _actions(statement)}
        assert used <= granted, (function, used - granted)


def _dynamodb_granted(function: str) -> set[str]:
    return {
        action for statement in _granted(function) for action in _actions(statement) if action.startswith("dynamodb:")
    }


# A transaction is authorised action by action: TransactWriteItems needs the permission of each Put, Update, Delete
# and ConditionCheck in it (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html).
_TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}


def test_the_sweeper_is_granted_exactly_the_dynamodb_calls_a_run_makes(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded against moto: sweeps that remove expired sessions (with and without a limit) and keep a live one."""
    import asyncio
    import secrets
    import time

    import botocore.client
    from moto import mock_aws

    from stratus.handlers import sweeper
    from stratus.stores.base import StoreOptions
    from stratus.stores.dynamodb.client import dynamodb_client
    from stratus.stores.dynamodb.schema import create_table
    from stratus.stores.factory import build_stores
    from stratus.stores.records import SessionRecord

    monkeypatch.setenv("STRATUS_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("STRATUS_SESSION_TTL_SECONDS", "600")
    made: set[str] = set()
    original = botocore.client.BaseClient._make_api_call

    def recording(client: Any, operation: str, params: dict[str, Any]) -> Any:
        if client.meta.service_model.service_name == "dynamodb":
            if operation == "TransactWriteItems":
                made.update(_TRANSACTION_ACTIONS[kind] for item in params["TransactItems"] for kind in item)
            else:
                made.add(operation)
        return original(client, operation, params)

    async def open_sessions(url: str, prefix: str, names: list[str], ago: float, limit: int) -> None:
        options = StoreOptions(
            session_ttl_seconds=600, prefix=prefix, max_sessions=limit, clock=lambda: time.time() - ago
        )
        stores = build_stores(url, options)
        try:
            for name in names:
                await stores.sessions.create(SessionRecord(session_id=name, protocol_version="2025-11-25"))
        finally:
            await stores.aclose()

    with mock_aws():
        for limit in (0, 100):
            prefix = f"iam-{secrets.token_hex(4)}"
            create_table(dynamodb_client(timeout=2.0), prefix)
            url = f"dynamodb://{prefix}"
            monkeypatch.setenv("STRATUS_STORE", url)
            monkeypatch.setenv("STRATUS_STORE_PREFIX", prefix)
            monkeypatch.setenv("STRATUS_MAX_SESSIONS", str(limit))
            asyncio.run(open_sessions(url, prefix, ["stale-1", "stale-2"], 660, limit))
            asyncio.run(open_sessions(url, prefix, ["fresh"], 0, limit))
            monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recording)
            assert sweeper.handler({"source": "aws.events"}, None) == {"swept": 2, "activeSessions": 1}
            assert sweeper.handler({"source": "aws.events"}, None) == {"swept": 0, "activeSessions": 1}
            monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", original)
    assert {"GetItem", "PutItem", "BatchGetItem", "Query", "UpdateItem"} <= made  # the cursor item and the sweep
    assert _dynamodb_granted("SweeperFunction") == {f"dynamodb:{operation}" for operation in made}


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def test_tasks_run_in_the_task_worker_which_both_shapes_may_invoke_and_nothing_else() -> None:
    resources = _parsed_template()["Resources"]
    worker = resources["TaskWorkerFunction"]["Properties"]
    assert (worker["Handler"], worker["Timeout"], worker["EventInvokeConfig"]["MaximumRetryAttempts"]) == (
        "stratus.handlers.task_worker.handler",
        900,
        0,
    )
    for function in ("BufferedFunction", "StreamingFunction"):
        assert (
            resources[function]["Properties"]["Environment"]["Variables"]["STRATUS_TASK_WORKER"] == "TaskWorkerFunction"
        )
        invokes = [statement for statement in _granted(function) if "lambda:InvokeFunction" in _actions(statement)]
        assert [statement["Resource"] for statement in invokes] == ["TaskWorkerFunction.Arn"]
    assert "STRATUS_TASK_WORKER" not in _environment()  # the worker never launches tasks itself


def test_a_task_worker_launch_that_fails_or_waits_past_15_minutes_goes_to_the_sweeper_which_it_may_invoke() -> None:
    """Retried, a launch would find its claim taken and end without running: a failed one goes to the sweeper at
    once (handlers/sweeper.py marks its run failed); SAM grants no destination to an explicit role."""
    resources = _parsed_template()["Resources"]
    config = resources["TaskWorkerFunction"]["Properties"]["EventInvokeConfig"]
    assert config == {
        "MaximumRetryAttempts": 0,
        "MaximumEventAgeInSeconds": 900,
        "DestinationConfig": {"OnFailure": {"Type": "Lambda", "Destination": "SweeperFunction.Arn"}},
    }
    invokes = [
        statement for statement in _granted("TaskWorkerFunction") if "lambda:InvokeFunction" in _actions(statement)
    ]
    assert [statement["Resource"] for statement in invokes] == ["SweeperFunction.Arn"]


def _environment() -> dict[str, Any]:
    """The variables every function gets (Globals), so the shapes and the sweeper share one configuration."""
    variables: dict[str, Any] = _parsed_template()["Globals"]["Function"]["Environment"]["Variables"]
    for function, resource in _parsed_template()["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            own = resource["Properties"].get("Environment", {}).get("Variables", {})
            assert not set(own) & set(variables), function  # nothing overrides the shared settings
    return variables


def test_secrets_are_referenced_never_inlined() -> None:
    variables = _environment()
    assert variables["STRATUS_SECRET_KEY"].startswith(("ssm:", "secretsmanager:"))
    assert variables["STRATUS_STORE"][0] == "UseElastiCache"
    assert variables["STRATUS_STORE"][2] == ["UseRedisUrl", "ssm:${RedisUrlParameter}", "dynamodb://${StateTable}"]


def test_the_sweeper_runs_on_a_schedule_with_the_session_limit_and_timeout_as_parameters() -> None:
    template = _parsed_template()
    sweeper = template["Resources"]["SweeperFunction"]["Properties"]
    assert sweeper["Events"]["Sweep"] == {"Type": "Schedule", "Properties": {"Schedule": "SweepSchedule"}}
    assert template["Parameters"]["SweepSchedule"]["Default"] == "rate(5 minutes)"
    assert (
        template["Parameters"]["MaxSessions"]["Default"],
        template["Parameters"]["SessionTimeoutSeconds"]["Default"],
    ) == (100, 1800)
    variables = _environment()
    assert (variables["STRATUS_MAX_SESSIONS"], variables["STRATUS_SESSION_TTL_SECONDS"]) == (
        "MaxSessions",
        "SessionTimeoutSeconds",
    )


def test_elasticache_serverless_is_an_option_in_the_functions_vpc() -> None:
    template = _parsed_template()
    cache = template["Resources"]["StateCache"]
    assert (cache["Type"], cache["Condition"]) == ("AWS::ElastiCache::ServerlessCache", "UseElastiCache")
    assert cache["Properties"]["Engine"] == "valkey"
    assert template["Parameters"]["StateStore"]["AllowedValues"] == ["dynamodb", "elasticache", "redis-url"]
    assert template["Globals"]["Function"]["VpcConfig"][0] == "InVpc"
    assert "ElastiCacheNeedsSubnets" in template["Rules"]


def test_alarms_watch_errors_throttles_duration_and_open_breakers() -> None:
    resources = _parsed_template()["Resources"]
    alarms = {
        name: resource["Properties"]
        for name, resource in resources.items()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
    }
    watched = {
        (props.get("MetricName"), props["Dimensions"][0]["Value"]) for props in alarms.values() if "Dimensions" in props
    }
    assert {
        ("Errors", "BufferedFunction"),
        ("Throttles", "BufferedFunction"),
        ("Errors", "StreamingFunction"),
        ("Throttles", "StreamingFunction"),
        ("Duration", "BufferedFunction"),
        ("Errors", "SweeperFunction"),
    } <= watched
    breaker = alarms["BreakerOpenAlarm"]["Metrics"][0]["Expression"]
    assert "breaker_transitions" in breaker and "state = 'open'" in breaker
    assert _parsed_template()["Globals"]["Function"]["Tracing"] == "Tracing"


def test_a_regional_rest_api_streams_from_the_streaming_function_past_29_seconds() -> None:
    resources = _parsed_template()["Resources"]
    events = resources["StreamingFunction"]["Properties"]["Events"]
    rest = events["StreamingRest"]["Properties"]
    assert (rest["RestApiId"], rest["Path"], rest["Method"]) == ("StreamingRestApi", "/{proxy+}", "ANY")
    assert rest["ResponseTransferMode"] == "RESPONSE_STREAM"
    assert rest["TimeoutInMillis"] > 29_000
    assert resources["StreamingRestApi"]["Properties"]["EndpointConfiguration"]["Type"] == "REGIONAL"


def test_auth_settings_are_parameters_passed_to_both_functions() -> None:
    template = _parsed_template()
    assert {"AuthMode", "AuthIssuer", "AuthAudience", "AuthJwksUrl"} <= set(template["Parameters"])
    assert template["Parameters"]["AuthMode"]["AllowedValues"] == ["off", "jwt", "gateway", "front"]
    variables = _environment()
    assert variables["STRATUS_AUTH_MODE"] == "AuthMode"
    assert variables["STRATUS_AUTH_JWKS_URL"] == ["HasAuthJwksUrl", "AuthJwksUrl", "AWS::NoValue"]
    assert variables["STRATUS_AUTH_UPSTREAM_ISSUER"] == ["AuthFront", "AuthUpstreamIssuer", "AWS::NoValue"]
    # The client secret is read from SSM, as the secret key is, by every function's role.
    assert variables["STRATUS_AUTH_UPSTREAM_CLIENT_SECRET"][1] == "ssm:${AuthUpstreamClientSecretParameter}"
    assert TEMPLATE.count("parameter${AuthUpstreamClientSecretParameter}") == 2


def _translated(parameters: dict[str, str] | None = None) -> dict[str, Any]:
    from stratus.emulator.stack import load_template, translate

    return translate(load_template(Path(__file__).parent.parent / "template.yaml"), parameters or {}, "us-east-1")


def test_the_elasticache_rule_checks_both_subnets_and_security_groups() -> None:
    assertions = _translated()["Rules"]["ElastiCacheNeedsSubnets"]["Assertions"]
    checked = {assertion["Assert"]["Fn::Not"][0]["Fn::EachMemberEquals"][0]["Ref"] for assertion in assertions}
    assert checked == {"VpcSubnetIds", "VpcSecurityGroupIds"}


def test_the_rest_api_has_only_its_v1_stage() -> None:
    resources = _translated()["Resources"]
    stages = [r["Properties"]["StageName"] for r in resources.values() if r["Type"] == "AWS::ApiGateway::Stage"]
    deployments = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGateway::Deployment"]
    assert stages == ["v1"]
    assert all("StageName" not in deployment for deployment in deployments)  # SAM's implicit "Stage"


def test_the_web_adapter_layer_arn_names_the_partition() -> None:
    layers = _translated()["Resources"]["StreamingFunction"]["Properties"]["Layers"]
    (adapter,) = [layer for layer in layers if layer["Fn::If"][0] == "IsArm64"]
    arns = [branch["Fn::Sub"] for branch in adapter["Fn::If"][1:]]
    assert all(arn.startswith("arn:${AWS::Partition}:lambda:${AWS::Region}:753240598075:layer:") for arn in arns)


@pytest.mark.parametrize(("value", "reserved"), [("", None), ("40", 40)])
def test_the_streaming_functions_reserved_concurrency_is_a_parameter_the_emulator_enforces(
    value: str, reserved: int | None
) -> None:
    from stratus.emulator.stack import read_stack

    stack = read_stack(TEMPLATE_PATH, {"StreamingReservedConcurrency": value})
    assert stack.functions["stratus-local-StreamingFunction"].reserved_concurrency == reserved
    assert stack.functions["stratus-local-BufferedFunction"].reserved_concurrency is None


def test_a_deploy_deletes_the_buffered_version_it_replaces_so_only_the_live_snapshot_bills() -> None:
    """SAM retains every version AutoPublishAlias publishes unless told otherwise, and each kept SnapStart snapshot
    bills its cache: the version a deploy replaces is deleted with it."""
    resources = _translated()["Resources"]
    versions = {
        resource["Properties"]["FunctionName"]["Ref"]: (name, resource)
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Version"
    }
    # The durable task worker's executions replay on the version they started on: its versions are kept.
    assert {function: resource["DeletionPolicy"] for function, (_, resource) in versions.items()} == {
        "BufferedFunction": "Delete",
        "DurableTaskWorkerFunction": "Retain",
    }
    alias = next(
        resource
        for resource in resources.values()
        if resource["Type"] == "AWS::Lambda::Alias"
        and resource["Properties"]["FunctionName"] == {"Ref": "BufferedFunction"}
    )
    assert alias["Properties"]["FunctionVersion"] == {"Fn::GetAtt": [versions["BufferedFunction"][0], "Version"]}


FUNCTIONS = (
    "BufferedFunction",
    "StreamingFunction",
    "SweeperFunction",
    "TaskWorkerFunction",
    "DurableTaskWorkerFunction",
)


def _role_statements(resources: dict[str, Any], role: str) -> list[dict[str, Any]]:
    """The statements a translated role holds: its inline policies' and those of the stack's managed policies."""
    properties = resources[role]["Properties"]
    documents = [policy["PolicyDocument"] for policy in properties.get("Policies", [])]
    documents += [
        resources[arn["Ref"]]["Properties"]["PolicyDocument"]
        for arn in properties["ManagedPolicyArns"]
        if isinstance(arn, dict) and "Ref" in arn
    ]
    return [statement for document in documents for statement in document["Statement"]]


def test_each_function_may_write_logs_only_to_its_own_log_group() -> None:
    """No role holds AWSLambdaBasicExecutionRole (logs on every group in the account): each writes its function's
    LoggingConfig group, and no two functions share a role."""
    resources = _translated()["Resources"]
    roles = {function: resources[function]["Properties"]["Role"]["Fn::GetAtt"][0] for function in FUNCTIONS}
    assert len(set(roles.values())) == len(FUNCTIONS)
    for function, role in roles.items():
        group = resources[function]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        assert resources[group]["Type"] == "AWS::Logs::LogGroup"
        assert "AWSLambdaBasicExecutionRole" not in json.dumps(resources[role]["Properties"]["ManagedPolicyArns"])
        logs = [s for s in _role_statements(resources, role) if any(a.startswith("logs:") for a in _actions(s))]
        assert [(sorted(_actions(s)), s["Resource"]) for s in logs] == [
            (["logs:CreateLogStream", "logs:PutLogEvents"], {"Fn::GetAtt": [group, "Arn"]})
        ], function


def test_the_state_table_outlives_the_stack_and_a_replacement() -> None:
    """`sam delete`, or an update that would replace the table, leaves it and every session and task in it."""
    table = _translated()["Resources"]["StateTable"]
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Retain", "Retain")


# The key term of each service docs/deploy.md's "In a VPC" section lists, as VpcSubnetIds' description names it.
_VPC_NEEDS = {
    "SSM": "SSM",
    "DynamoDB": "DynamoDB",
    "Lambda": "Lambda",
    "The Redis store": "Redis",
    "`AuthMode=front`": "AuthMode=front",
    "`AuthMode=jwt`": "AuthMode=jwt",
    "A gateway's upstreams": "upstreams",
}


def test_the_vpc_parameter_names_every_service_the_vpc_section_of_the_deploy_guide_lists() -> None:
    text = (TEMPLATE_PATH.parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    section = text[text.index("### In a VPC: what each function must reach") :]
    section = section[: section.index("\n### ")]
    table = {
        name.strip()
        for cells in re.findall(r"^\| `\w+Function` \| ([^|]+) \| ([^|]+) \|$", section, re.M)
        for cell in cells
        for name in cell.split(",")
    }
    listed = re.findall(r"^- \*\*(.+?)\*\*", section, re.MULTILINE)
    assert table == {"SSM", "DynamoDB", "Lambda"} and set(table) <= set(listed)
    description = " ".join(_translated()["Parameters"]["VpcSubnetIds"]["Description"].split())
    assert [name for name in listed if _VPC_NEEDS[name] not in description] == []


def _resolved_alarms(stack_name: str = "stratus-local") -> dict[str, dict[str, Any]]:
    """Each alarm of the translated template, its intrinsics resolved as CloudFormation would for `stack_name`."""
    from stratus.emulator.intrinsics import Resolver, parameter_values
    from stratus.emulator.stack import load_template

    values = parameter_values(load_template(TEMPLATE_PATH), {})
    resolver = Resolver(_translated(), values, stack_name=stack_name, region="us-east-1")
    return {alarm: resolver.properties(alarm) for alarm in resolver.created("AWS::CloudWatch::Alarm")}


def test_the_task_workers_errors_throttles_dropped_launches_and_lost_failure_records_raise_alarms() -> None:
    watched = {
        (alarm["MetricName"], alarm["Dimensions"][0]["Value"])
        for alarm in _resolved_alarms().values()
        if alarm.get("Namespace") == "AWS/Lambda"
        and alarm["Dimensions"][0]["Name"] == "FunctionName"
        and (alarm.get("Statistic"), alarm["Threshold"], alarm["ComparisonOperator"])
        == ("Sum", 1, "GreaterThanOrEqualToThreshold")
    }
    worker = "stratus-local-TaskWorkerFunction"
    assert {
        ("Errors", worker),
        ("Throttles", worker),
        ("AsyncEventsDropped", worker),
        ("DestinationDeliveryFailures", worker),
    } <= watched


_QUERY = re.compile(r'^SELECT SUM\((\w+)\) FROM "([^"]+)"(?: WHERE (.+))?$')


def _queried(alarm: dict[str, Any]) -> tuple[str, str, str | None]:
    """The metric, namespace and condition of an alarm on one Metrics Insights query."""
    [query] = alarm["Metrics"]
    found = _QUERY.match(query["Expression"])
    assert found is not None and query["ReturnData"] is True, query
    return found[1], found[2], found[3]


def test_the_breaker_and_failed_run_alarms_query_only_this_stacks_metrics() -> None:
    """Stratus's metrics go to a namespace named for the stack, which the alarms query: another stack's breaker or
    failed task does not trip them (the whole `Stratus` namespace did)."""
    from stratus.emulator.stack import read_stack

    namespaces = {f.environment["STRATUS_METRICS_NAMESPACE"] for f in read_stack(TEMPLATE_PATH).functions.values()}
    assert namespaces == {"Stratus/stratus-local"}
    alarms = _resolved_alarms()
    assert _queried(alarms["BreakerOpenAlarm"]) == ("breaker_transitions", "Stratus/stratus-local", "state = 'open'")
    assert _queried(alarms["TaskRunsFailedAlarm"]) == ("task_runs_failed", "Stratus/stratus-local", None)
    assert _queried(_resolved_alarms("other-stack")["BreakerOpenAlarm"])[1] == "Stratus/other-stack"


def test_the_failed_run_alarm_watches_the_metric_the_sweeper_emits_as_the_template_configures_it() -> None:
    """The sweeper, given a task worker's failure record with the template's environment (a Redis store standing in
    for the table, the secret inline), writes an EMF line for task_runs_failed in the namespace the alarm queries."""
    from stratus.emulator.stack import read_stack
    from tests.fixtures.fresh_interpreter import run_fresh

    sweeper = read_stack(TEMPLATE_PATH).functions["stratus-local-SweeperFunction"]
    environment = {
        **sweeper.environment,
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"alarm-{uuid.uuid4().hex[:8]}",
        "STRATUS_SECRET_KEY": SECRET_KEY,
    }
    record = {
        "version": "1.0",
        "requestContext": {"requestId": "r-1", "condition": "RetriesExhausted", "approximateInvokeCount": 1},
        "requestPayload": {"stratusTask": "no-such-task"},
    }
    code = f"from stratus.handlers import sweeper; print(sweeper.handler({record!r}, None))"
    lines = run_fresh(code, environment, cwd=TEMPLATE_PATH.parent).splitlines()
    assert lines[-1] == "{'markedFailed': 0}"  # no such task: nothing to mark, and still counted
    emitted = {
        (directive["Namespace"], metric["Name"])
        for line in lines
        if line.startswith('{"_aws"')
        for directive in json.loads(line)["_aws"]["CloudWatchMetrics"]
        for metric in directive["Metrics"]
    }
    metric, namespace, _ = _queried(_resolved_alarms()["TaskRunsFailedAlarm"])
    assert (namespace, metric) in emitted


def test_the_reserved_concurrency_parameter_refuses_0_which_would_disable_the_function() -> None:
    """CloudFormation matches AllowedPattern against the whole value: empty (no reservation) or a count from 1."""
    pattern = _translated()["Parameters"]["StreamingReservedConcurrency"]["AllowedPattern"]
    accepted = {
        value for value in ("", "1", "40", "900", "0", "00", "007", "-1", " 4", "4.0") if re.fullmatch(pattern, value)
    }
    assert accepted == {"", "1", "40", "900"}


def test_the_rest_api_answers_a_lambda_throttle_with_a_retryable_429() -> None:
    """API Gateway's INTEGRATION_FAILURE response (a Lambda throttle's 500 otherwise) is 429 with Retry-After."""
    body = _translated()["Resources"]["StreamingRestApi"]["Properties"]["Body"]
    assert body["x-amazon-apigateway-gateway-responses"] == {
        "INTEGRATION_FAILURE": {
            "statusCode": "429",
            "responseParameters": {"gatewayresponse.header.Retry-After": "'1'"},
            "responseTemplates": {},
        }
    }


@pytest.mark.parametrize(
    ("parameters", "exported", "xray_writes"),
    [
        ({}, "off", False),
        ({"Traces": "xray"}, "xray", True),
        ({"Traces": "otlp", "TracesEndpoint": "https://collector.example/v1/traces"}, "otlp", False),
        ({"Tracing": "Active"}, "off", True),
    ],
)
def test_traces_are_a_parameter_and_only_a_stack_that_writes_to_x_ray_may(
    parameters: dict[str, str], exported: str, xray_writes: bool
) -> None:
    from stratus.emulator.stack import read_stack

    stack = read_stack(TEMPLATE_PATH, parameters)
    for function in stack.functions.values():
        assert function.environment["STRATUS_TRACING"] == exported
        assert function.environment.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == parameters.get("TracesEndpoint")
        assert function.role is not None
        assert function.role.allows("xray:PutTraceSegments", "*") is xray_writes, function.name


def test_a_traces_layer_is_added_to_every_function_before_its_own() -> None:
    layer = "arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"
    resources = _translated({"TracesLayerArn": layer})["Resources"]
    functions = [resource for resource in resources.values() if resource["Type"] == "AWS::Lambda::Function"]
    assert functions and all(
        resource["Properties"]["Layers"][0]
        == {"Fn::If": ["HasTracesLayer", {"Ref": "TracesLayerArn"}, {"Ref": "AWS::NoValue"}]}
        for resource in functions
    )
