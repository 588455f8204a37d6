"""`stratus check-deploy` against `stratus local` itself: what it records there is the expectation a deployed stack
is set beside. An open stack's doors answer with a session and poll; a stack with `AuthMode=jwt` challenges at
every door, the REST API's challenge in `x-amzn-Remapped-WWW-Authenticate` as API Gateway renames it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

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


def test_a_burst_past_a_reservation_is_refused_as_each_door_refuses_it(tmp_path: Path) -> None:
    """`--burst`: past the streaming function's reservation, the Function URL answers Lambda's 429 and the REST API
    its INTEGRATION_FAILURE gateway response (429 with Retry-After, which clients retry, not a 500); the HTTP API's
    function, with no reservation, refuses none."""
    record = tmp_path / "local.json"
    with serving(TEMPLATE, parameters={"StreamingReservedConcurrency": "1"}) as stack:
        # 80 pings take one container well past the 0.25 s the emulator waits for it before throttling
        assert _check(stack, "--burst", "80", "--record", str(record)) == 0
    found = json.loads(record.read_text())
    assert found["StreamingMcpEndpoint burst"] == "refused 429 (TooManyRequestsException)"
    assert found["StreamingRestMcpEndpoint burst"] == "refused 429 with Retry-After"
    assert found["McpEndpoint burst"] == "none refused"


def test_a_burst_too_large_is_refused_before_anything_is_sent(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-deploy", "--endpoint", "McpEndpoint=http://127.0.0.1:1/mcp", "--burst", "201"]) == 2
    assert "--burst takes 1 to 200 requests" in capsys.readouterr().err


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


def _role() -> dict[str, Any]:
    trust = {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    document = {"Version": "2012-10-17", "Statement": [trust]}
    return {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": document}}


def _function() -> dict[str, Any]:
    code = {"ZipFile": "def handler(event, context):\n    return None\n"}
    properties = {"Runtime": "python3.13", "Handler": "index.handler", "Role": {"Fn::GetAtt": ["Role", "Arn"]}}
    return {"Type": "AWS::Lambda::Function", "Properties": {**properties, "Code": code}}


def test_with_a_stack_what_it_left_in_the_account_is_reported(aws_credentials: None) -> None:
    """Versions kept, concurrency, what a throttled request gets at each REST API, custom metrics and their price,
    where failed task runs go, and Parameter Store's throughput: from CloudFormation, Lambda, API Gateway and
    CloudWatch on moto, and SSM's service setting as botocore's Stubber answers it (moto has no GetServiceSetting)."""
    import boto3
    from botocore.stub import Stubber
    from moto import mock_aws

    from stratus.handlers.deploy_account import HIGH_THROUGHPUT, account_findings

    resources = {
        "Role": _role(),
        "TaskWorkerFunction": _function(),
        "SweeperFunction": _function(),
        "StreamingRestApi": {"Type": "AWS::ApiGateway::RestApi", "Properties": {"Name": "streaming"}},
        "OtherRestApi": {"Type": "AWS::ApiGateway::RestApi", "Properties": {"Name": "left at the default"}},
    }
    with mock_aws():
        boto3.client("cloudformation").create_stack(StackName="mcp", TemplateBody=json.dumps({"Resources": resources}))
        summaries = boto3.client("cloudformation").list_stack_resources(StackName="mcp")["StackResourceSummaries"]
        named = {each["LogicalResourceId"]: each["PhysicalResourceId"] for each in summaries}
        functions = boto3.client("lambda")
        functions.publish_version(FunctionName=named["SweeperFunction"])
        functions.update_function_configuration(FunctionName=named["SweeperFunction"], Description="deployed again")
        functions.publish_version(FunctionName=named["SweeperFunction"])  # each deploy's version kept
        functions.put_function_concurrency(FunctionName=named["TaskWorkerFunction"], ReservedConcurrentExecutions=10)
        sweeper = functions.get_function(FunctionName=named["SweeperFunction"])["Configuration"]["FunctionArn"]
        functions.put_function_event_invoke_config(
            FunctionName=named["TaskWorkerFunction"], DestinationConfig={"OnFailure": {"Destination": sweeper}}
        )
        boto3.client("apigateway").put_gateway_response(  # as the template's GatewayResponses make it
            restApiId=named["StreamingRestApi"],
            responseType="INTEGRATION_FAILURE",
            statusCode="429",
            responseParameters={"gatewayresponse.header.Retry-After": "'1'"},
        )
        now = datetime.now(UTC)
        for milliseconds in (12.0, 14.0, 40.0):  # three invocations of the sweeper, as Lambda reports them
            duration = {
                "MetricName": "Duration",
                "Dimensions": [{"Name": "FunctionName", "Value": named["SweeperFunction"]}],
                "Timestamp": now - timedelta(minutes=3),
                "Value": milliseconds,
                "Unit": "Milliseconds",
            }
            boto3.client("cloudwatch").put_metric_data(Namespace="AWS/Lambda", MetricData=[duration])
        for tool in ("add", "search", "notes"):
            metric = {"MetricName": "calls", "Dimensions": [{"Name": "tool", "Value": tool}], "Value": 1}
            boto3.client("cloudwatch").put_metric_data(Namespace="Stratus/mcp", MetricData=[metric])
        ssm = boto3.client("ssm")
        stubbed = Stubber(ssm)
        setting = {"SettingId": HIGH_THROUGHPUT, "SettingValue": "false"}
        stubbed.add_response("get_service_setting", {"ServiceSetting": setting}, {"SettingId": HIGH_THROUGHPUT})
        with stubbed:
            found = account_findings("mcp", lambda service: ssm if service == "ssm" else boto3.client(service), now=now)
    assert found == {
        "SweeperFunction versions kept": "2",
        "SweeperFunction concurrency": "shares the account's",
        "TaskWorkerFunction versions kept": "0",
        "TaskWorkerFunction concurrency": "reserved 10",
        "SweeperFunction duration": "mean 22.0 ms, at most 40 ms, over 3 invocations in the last 15 minutes",
        "TaskWorkerFunction duration": "no invocation in the last 15 minutes (Lambda's metrics arrive within minutes)",
        "throttled at OtherRestApi": "500 (no INTEGRATION_FAILURE gateway response: clients do not retry it)",
        "throttled at StreamingRestApi": "429 with Retry-After (its INTEGRATION_FAILURE gateway response)",
        "custom metrics": "3 in Stratus/mcp ($0.90 a month)",
        "alarms": "none",  # moto's CloudFormation holds no alarm: their states are the next test's
        "task failures go to": "SweeperFunction",
        "Parameter Store throughput": "standard (40 reads a second, shared by everything in the account and Region)",
    }


def test_the_stack_s_alarms_are_reported_with_those_not_ok_named(aws_credentials: None) -> None:
    import boto3
    from moto import mock_aws

    from stratus.handlers.deploy_account import alarm_states

    rule = {
        "MetricName": "Errors",
        "Namespace": "AWS/Lambda",
        "Statistic": "Sum",
        "Period": 60,
        "EvaluationPeriods": 1,
        "Threshold": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
    }
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch")
        for name in ("mcp-SweeperErrors-1", "mcp-TaskDrops-2"):
            cloudwatch.put_metric_alarm(AlarmName=name, **rule)
        cloudwatch.set_alarm_state(AlarmName="mcp-SweeperErrors-1", StateValue="OK", StateReason="checked")
        cloudwatch.set_alarm_state(AlarmName="mcp-TaskDrops-2", StateValue="ALARM", StateReason="dropped")
        assert alarm_states(cloudwatch, ["mcp-SweeperErrors-1", "mcp-TaskDrops-2"]) == "2, not OK: mcp-TaskDrops-2"
        cloudwatch.set_alarm_state(AlarmName="mcp-TaskDrops-2", StateValue="OK", StateReason="recovered")
        assert alarm_states(cloudwatch, ["mcp-SweeperErrors-1", "mcp-TaskDrops-2"]) == "2, all OK"
