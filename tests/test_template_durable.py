"""template.yaml's durable task worker (`DurableTasks=true`): present only when asked for, configured as a durable
function behind an alias, its failures reaching the sweeper through a dead-letter queue, and its IAM scoped to it.
The template is translated by the SAM translator and resolved as CloudFormation would (the emulator's resolver)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stratus import Settings
from tests.fixtures.keys import SECRET_KEY

TEMPLATE_PATH = Path(__file__).parent.parent / "template.yaml"
STACK = "stratus-local"
FUNCTION_ARN = f"arn:aws:lambda:us-east-1:123456789012:function:{STACK}-DurableTaskWorkerFunction"


def _translated() -> dict[str, Any]:
    from stratus.emulator.stack import load_template, translate

    return translate(load_template(TEMPLATE_PATH), {}, "us-east-1")


def _resolver(durable: str) -> Any:
    from stratus.emulator.intrinsics import Resolver, parameter_values
    from stratus.emulator.stack import load_template

    values = parameter_values(load_template(TEMPLATE_PATH), {"DurableTasks": durable})
    return Resolver(_translated(), values, stack_name=STACK, region="us-east-1")


@pytest.fixture(scope="module")
def durable() -> Any:
    return _resolver("true")


def _statements(resolver: Any, policy: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = resolver.properties(policy)["PolicyDocument"]["Statement"]
    return statements


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def test_the_durable_worker_exists_only_when_durable_tasks_are_asked_for() -> None:
    default = _resolver("false")
    assert _translated()["Parameters"]["DurableTasks"]["Default"] == "false"
    conditioned = [name for name in _translated()["Resources"] if name.startswith("DurableTask")]
    assert conditioned and not any(default.exists(name) for name in conditioned)
    assert not default.exists("SweeperDeadLetterMapping")
    for function in ("BufferedFunction", "StreamingFunction"):
        assert "STRATUS_TASK_WORKER_DURABLE" not in default.properties(function)["Environment"]["Variables"]
    assert "DurableTaskWorkerFunction" in _resolver("true").created("AWS::Lambda::Function")


def test_the_durable_worker_is_a_durable_function_with_the_timeout_and_retention_as_parameters(durable: Any) -> None:
    properties = durable.properties("DurableTaskWorkerFunction")
    assert (properties["Handler"], properties["Runtime"], properties["Timeout"]) == (
        "stratus.handlers.durable_worker.handler",
        "python3.13",
        "900",
    )
    assert properties["DurableConfig"] == {"ExecutionTimeout": "86400", "RetentionPeriodInDays": "14"}
    parameters = _translated()["Parameters"]
    timeout, retention = parameters["DurableExecutionTimeoutSeconds"], parameters["DurableRetentionDays"]
    assert (timeout["MinValue"], timeout["MaxValue"]) == (900, 31622400)  # AWS's most: a 366-day year
    assert (retention["MinValue"], retention["MaxValue"]) == (1, 90)
    invocation = parameters["DurableTaskWorkerTimeout"]  # one invocation's: Lambda's most, 15 minutes
    assert (invocation["Default"], invocation["MinValue"], invocation["MaxValue"]) == (900, 30, 900)


def test_the_serving_functions_start_tasks_through_the_alias_which_the_settings_accept(durable: Any) -> None:
    alias = durable.properties("DurableTaskWorkerFunctionAliaslive")
    assert alias["Name"] == "live"
    for function in ("BufferedFunction", "StreamingFunction"):
        variables = durable.properties(function)["Environment"]["Variables"]
        assert variables["STRATUS_TASK_WORKER_DURABLE"] == f"{FUNCTION_ARN}:live"
        settings = Settings.from_env(
            {
                "STRATUS_TASK_WORKER": variables["STRATUS_TASK_WORKER"],
                "STRATUS_TASK_WORKER_DURABLE": variables["STRATUS_TASK_WORKER_DURABLE"],
                "STRATUS_SECRET_KEY": SECRET_KEY,
            }
        )
        assert settings.task_worker_durable == f"{FUNCTION_ARN}:live"
    assert (
        "STRATUS_TASK_WORKER_DURABLE" not in durable.properties("DurableTaskWorkerFunction")["Environment"]["Variables"]
    )


def test_the_serving_functions_may_invoke_the_alias_and_stop_and_answer_this_functions_executions_only(
    durable: Any,
) -> None:
    assert _translated()["Resources"]["DurableTasksPolicy"]["DependsOn"] == "DurableTaskWorkerCheckpoints"
    policy = durable.properties("DurableTasksPolicy")
    assert sorted(policy["Roles"]) == [f"{STACK}-BufferedRole", f"{STACK}-StreamingRole"]
    granted = {
        (action, json.dumps(s["Resource"]))
        for s in _statements(durable, "DurableTasksPolicy")
        for action in _actions(s)
    }
    executions = json.dumps(f"{FUNCTION_ARN}:*")
    assert granted == {
        ("lambda:InvokeFunction", json.dumps(f"{FUNCTION_ARN}:live")),
        ("lambda:ListDurableExecutionsByFunction", json.dumps([FUNCTION_ARN, f"{FUNCTION_ARN}:*"])),
        ("lambda:StopDurableExecution", executions),
        ("lambda:SendDurableExecutionCallbackSuccess", executions),
        ("lambda:SendDurableExecutionCallbackFailure", executions),
        ("lambda:SendDurableExecutionCallbackHeartbeat", executions),
    }


def test_the_durable_worker_checkpoints_only_its_own_executions_and_writes_only_its_dead_letters(
    durable: Any,
) -> None:
    function = durable.properties("DurableTaskWorkerFunction")
    role = f"{STACK}-DurableTaskWorkerRole"
    assert function["Role"] == f"arn:aws:iam::123456789012:role/{role}"
    checkpoints = durable.properties("DurableTaskWorkerCheckpoints")
    assert checkpoints["Roles"] == [role]
    assert [(sorted(_actions(s)), s["Resource"]) for s in checkpoints["PolicyDocument"]["Statement"]] == [
        (["lambda:CheckpointDurableExecution", "lambda:GetDurableExecutionState"], f"{FUNCTION_ARN}:*")
    ]
    queue = durable.get_att("DurableTaskDeadLetters", "Arn")
    inline = [
        s for p in durable.properties("DurableTaskWorkerRole")["Policies"] for s in p["PolicyDocument"]["Statement"]
    ]
    assert [(s["Action"], s["Resource"]) for s in inline if "sqs:SendMessage" in _actions(s)] == [
        ("sqs:SendMessage", queue)
    ]
    assert "AWSLambdaBasicDurableExecutionRolePolicy" not in json.dumps(durable.properties("DurableTaskWorkerRole"))


def test_a_failed_execution_reaches_the_sweeper_through_a_dead_letter_queue_not_a_destination(durable: Any) -> None:
    function = durable.properties("DurableTaskWorkerFunction")
    queue = durable.get_att("DurableTaskDeadLetters", "Arn")
    assert function["DeadLetterConfig"] == {"TargetArn": queue}
    assert not durable.created("AWS::Lambda::EventInvokeConfig") or all(
        durable.properties(config)["FunctionName"] != durable.ref("DurableTaskWorkerFunction")
        for config in durable.created("AWS::Lambda::EventInvokeConfig")
    )
    mapping = durable.properties("SweeperDeadLetterMapping")
    assert (mapping["FunctionName"], mapping["EventSourceArn"]) == (f"{STACK}-SweeperFunction", queue)
    reads = _statements(durable, "SweeperReadsDeadLetters")
    assert durable.properties("SweeperReadsDeadLetters")["Roles"] == [f"{STACK}-SweeperRole"]
    assert [(sorted(_actions(s)), s["Resource"]) for s in reads] == [
        (["sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"], queue)
    ]


def test_the_durable_workers_errors_and_unread_dead_letters_raise_alarms(durable: Any) -> None:
    alarms = {name: durable.properties(name) for name in durable.created("AWS::CloudWatch::Alarm")}
    watched = {
        (alarm["Namespace"], alarm["MetricName"], alarm["Dimensions"][0]["Value"])
        for alarm in alarms.values()
        if "Namespace" in alarm
    }
    assert ("AWS/Lambda", "Errors", f"{STACK}-DurableTaskWorkerFunction") in watched
    assert (
        "AWS/SQS",
        "ApproximateNumberOfMessagesVisible",
        durable.get_att("DurableTaskDeadLetters", "QueueName"),
    ) in watched
    default = _resolver("false")
    assert not any(name.startswith("DurableTask") for name in default.created("AWS::CloudWatch::Alarm"))
