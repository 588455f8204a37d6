"""`stratus check-deploy --stack`'s look at what the stack left in the account: what bills every month whether or not
anyone calls, and what a failure or a burst meets. Read with boto3 (imported here only), never compared with
`stratus local`, which has no account: each finding is printed for the user to judge, with what it costs.

- `<function> versions kept`: the published versions CloudFormation left (`ListVersionsByFunction`). With SnapStart
  each keeps a snapshot cached and billed while it exists; the template's `VersionDeletionPolicy` should leave one.
- `<function> concurrency`: its reservation (`GetFunctionConcurrency`): the most invocations it may run, past which
  each door answers as docs/deploy.md ("Throttles: what each front door answers") says; none shares the account's.
- `throttled at <door>`: what a request Lambda throttles gets at each door the stack has: Lambda's 429 at a
  Function URL, 500 at an HTTP API, and at a REST API what its `INTEGRATION_FAILURE` gateway response makes of it
  (the template's: 429 with `Retry-After`; API Gateway's default: 500, which clients do not retry).
- `<function> duration`: Lambda's `Duration` metric over the last 15 minutes (`GetMetricStatistics`, `AWS/Lambda`):
  the mean and the most an invocation ran, and how many ran. On a stack with idle clients most of the streaming
  function's invocations are polls: a poll bills its mean, rounded up to the millisecond. Lambda sends the metric
  within minutes (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics.html): run the check again for
  its own polls to be counted.
- `custom metrics`: the metrics in the stack's namespace `Stratus/<stack>` (`ListMetrics`), $0.30 each a month.
- `alarms`: the stack's alarms and any not `OK` (`DescribeAlarms`).
- `task failures go to`: where the task worker's failed runs are sent (its on-failure destination), which the
  sweeper must be for a failed task to be marked failed rather than left `working` until its TTL.
- `Parameter Store throughput`: standard (40 reads a second for the account and Region, shared with everything in
  it) or high (`GetServiceSetting`): the headroom a burst of cold starts reading secrets has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

METRIC_PRICE = 0.30
"""A custom metric's monthly price (us-east-1, first 10,000), https://aws.amazon.com/cloudwatch/pricing/."""
HIGH_THROUGHPUT = "/ssm/parameter-store/high-throughput-enabled"
DURATION_WINDOW = timedelta(minutes=15)


def account_findings(
    stack: str, client: Callable[[str], Any] | None = None, now: datetime | None = None
) -> dict[str, str]:
    """Each finding by name; `client` makes a service's client (boto3's, with its region and credentials); `now`
    ends the window durations are read over (default: the clock's)."""
    now = now or datetime.now(UTC)
    if client is None:
        import boto3

        client = boto3.client
    resources = dict(_resources(client("cloudformation"), stack))
    functions = {logical: name for logical, (kind, name) in resources.items() if kind == "AWS::Lambda::Function"}
    alarms = [physical for kind, physical in resources.values() if kind == "AWS::CloudWatch::Alarm"]
    found: dict[str, str] = {}
    lambda_client, cloudwatch = client("lambda"), client("cloudwatch")
    for logical, name in sorted(functions.items()):
        versions = _versions(lambda_client, name)
        found[f"{logical} versions kept"] = str(len(versions))
        reserved = lambda_client.get_function_concurrency(FunctionName=name).get("ReservedConcurrentExecutions")
        found[f"{logical} concurrency"] = "shares the account's" if reserved is None else f"reserved {reserved}"
        found[f"{logical} duration"] = _duration(cloudwatch, name, now)
    found.update(_throttled_doors(client, resources))
    found["custom metrics"] = _metrics(cloudwatch, f"Stratus/{stack}")
    found["alarms"] = alarm_states(cloudwatch, alarms)
    if "TaskWorkerFunction" in functions:
        found["task failures go to"] = _failure_destination(lambda_client, functions["TaskWorkerFunction"], functions)
    found["Parameter Store throughput"] = _parameter_store(client("ssm"))
    return found


def _resources(cloudformation: Any, stack: str) -> Iterator[tuple[str, tuple[str, str]]]:
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack):
        for resource in page["StackResourceSummaries"]:
            yield resource["LogicalResourceId"], (resource["ResourceType"], resource.get("PhysicalResourceId", ""))


def _throttled_doors(client: Callable[[str], Any], resources: dict[str, tuple[str, str]]) -> dict[str, str]:
    """What each of the stack's doors answers a request Lambda throttles (docs/deploy.md, "Throttles")."""
    kinds = {kind for kind, _ in resources.values()}
    found: dict[str, str] = {}
    if "AWS::Lambda::Url" in kinds:
        found["throttled at a Function URL"] = "429 (Lambda's own: clients retry it)"
    if "AWS::ApiGatewayV2::Api" in kinds:
        found["throttled at the HTTP API"] = "500 (an HTTP API has no gateway response to change it)"
    apigateway = client("apigateway") if "AWS::ApiGateway::RestApi" in kinds else None
    for logical, (kind, rest_api) in sorted(resources.items()):
        if kind == "AWS::ApiGateway::RestApi" and apigateway is not None:
            found[f"throttled at {logical}"] = _integration_failure(apigateway, rest_api)
    return found


def _integration_failure(apigateway: Any, rest_api: str) -> str:
    """A REST API answers a throttled Lambda integration 500 unless its INTEGRATION_FAILURE response is changed."""
    try:
        response = apigateway.get_gateway_response(restApiId=rest_api, responseType="INTEGRATION_FAILURE")
    except apigateway.exceptions.NotFoundException:
        response = {"defaultResponse": True}
    if response.get("defaultResponse", False):
        return "500 (no INTEGRATION_FAILURE gateway response: clients do not retry it)"
    retry = "with" if "gatewayresponse.header.Retry-After" in response.get("responseParameters", {}) else "without"
    return f"{response.get('statusCode', '?')} {retry} Retry-After (its INTEGRATION_FAILURE gateway response)"


def _versions(lambda_client: Any, name: str) -> list[str]:
    kept: list[str] = []
    for page in lambda_client.get_paginator("list_versions_by_function").paginate(FunctionName=name):
        kept += [each["Version"] for each in page["Versions"] if each["Version"] != "$LATEST"]
    return kept


def _duration(cloudwatch: Any, function: str, now: datetime) -> str:
    window = int(DURATION_WINDOW.total_seconds())
    points = cloudwatch.get_metric_statistics(
        Namespace="AWS/Lambda",
        MetricName="Duration",
        Dimensions=[{"Name": "FunctionName", "Value": function}],
        StartTime=now - DURATION_WINDOW,
        EndTime=now,
        Period=window,
        Statistics=["Average", "Maximum", "SampleCount"],
    )["Datapoints"]
    count = sum(point["SampleCount"] for point in points)
    if not count:
        return "no invocation in the last 15 minutes (Lambda's metrics arrive within minutes)"
    mean = sum(point["Average"] * point["SampleCount"] for point in points) / count
    most = max(point["Maximum"] for point in points)
    return f"mean {mean:.1f} ms, at most {most:.0f} ms, over {count:.0f} invocations in the last 15 minutes"


def _metrics(cloudwatch: Any, namespace: str) -> str:
    count = sum(len(page["Metrics"]) for page in cloudwatch.get_paginator("list_metrics").paginate(Namespace=namespace))
    return f"{count} in {namespace} (${count * METRIC_PRICE:.2f} a month)"


def alarm_states(cloudwatch: Any, names: list[str]) -> str:
    """How many of the named alarms there are, and those not `OK`."""
    if not names:
        return "none"
    states: dict[str, str] = {}
    for start in range(0, len(names), 100):  # DescribeAlarms takes at most 100 names
        for page in cloudwatch.get_paginator("describe_alarms").paginate(AlarmNames=names[start : start + 100]):
            states.update({alarm["AlarmName"]: alarm["StateValue"] for alarm in page["MetricAlarms"]})
    not_ok = sorted(name for name, state in states.items() if state != "OK")
    return f"{len(states)}, " + (f"not OK: {', '.join(not_ok)}" if not_ok else "all OK")


def _failure_destination(lambda_client: Any, worker: str, functions: dict[str, str]) -> str:
    try:
        config = lambda_client.get_function_event_invoke_config(FunctionName=worker)
    except lambda_client.exceptions.ResourceNotFoundException:
        return "nowhere (no event invoke config)"
    destination = config.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
    if not destination:
        return "nowhere"
    named = [logical for logical, name in functions.items() if destination.split(":")[6:7] == [name]]
    return named[0] if named else destination


def _parameter_store(ssm: Any) -> str:
    from botocore.exceptions import ClientError

    try:
        value = ssm.get_service_setting(SettingId=HIGH_THROUGHPUT)["ServiceSetting"]["SettingValue"]
    except ClientError as refused:
        return f"unknown ({refused.response.get('Error', {}).get('Code', 'refused')})"
    if value == "true":
        return "high (up to 10,000 reads a second, billed per request)"
    return "standard (40 reads a second, shared by everything in the account and Region)"
