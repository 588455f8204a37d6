"""IAM for the emulated stack: each function's execution role, and whether it allows a call.

A function runs with its role (https://docs.aws.amazon.com/lambda/latest/dg/lambda-intro-execution-role.html): the
statements of the role's inline policies, of the customer managed policies the stack attaches, and of the AWS
managed ones it names. A call is allowed when some statement allows its action on each resource it touches and
none denies it (explicit deny wins:
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html). Action names compare
without regard to case; `*` and `?` are wildcards in actions and resources
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html).

What is not modelled: conditions, `NotAction` / `NotResource`, AWS managed policies other than the ones Stratus's
template uses, permission boundaries and service control policies. A role with a statement or a policy the emulator
cannot evaluate is left unchecked (`Role.unchecked` says why, and `stratus local` prints it): its calls are recorded
and allowed, rather than refused where AWS might allow them.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from stratus.emulator.intrinsics import Resolver


@dataclass(frozen=True)
class Statement:
    """One statement of an identity-based policy."""

    effect: str
    """`Allow` or `Deny`."""
    actions: tuple[str, ...]
    resources: tuple[str, ...]

    def covers(self, action: str, resource: str) -> bool:
        return any(_matches(pattern, action, ignore_case=True) for pattern in self.actions) and any(
            _matches(pattern, resource) for pattern in self.resources
        )


class UnevaluableError(Exception):
    """A policy the emulator cannot evaluate: what it holds, and where."""


def _statement(raw: Mapping[str, Any], where: str) -> Statement:
    unsupported = {"Condition", "NotAction", "NotResource", "NotPrincipal"} & set(raw)
    if unsupported:
        raise UnevaluableError(f"{where} uses {', '.join(sorted(unsupported))}")

    def listed(value: Any) -> tuple[str, ...]:
        return tuple(str(item) for item in (value if isinstance(value, list) else [value]))

    return Statement(str(raw.get("Effect", "")), listed(raw.get("Action", [])), listed(raw.get("Resource", [])))


def statements(document: Mapping[str, Any], where: str) -> tuple[Statement, ...]:
    """The statements of a policy document (`{"Statement": [...]}` or one statement object)."""
    raw = document.get("Statement", [])
    return tuple(_statement(item, where) for item in (raw if isinstance(raw, list) else [raw]))


@cache
def _pattern(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    regex = "".join(".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern)
    return re.compile(regex, re.IGNORECASE if ignore_case else 0)


def _matches(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    return _pattern(pattern, ignore_case).fullmatch(value) is not None


_LOGS = ("logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents")
# https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSXRayDaemonWriteAccess.html (SAM attaches it
# by its older name, AWSXrayWriteOnlyAccess, in the aws partition)
_XRAY = (
    Statement(
        "Allow",
        (
            "xray:PutTraceSegments",
            "xray:PutTelemetryRecords",
            "xray:GetSamplingRules",
            "xray:GetSamplingTargets",
            "xray:GetSamplingStatisticSummaries",
        ),
        ("*",),
    ),
)
AWS_MANAGED: Mapping[str, tuple[Statement, ...]] = {
    # https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSLambdaBasicExecutionRole.html
    "service-role/AWSLambdaBasicExecutionRole": (Statement("Allow", _LOGS, ("*",)),),
    # https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSLambdaVPCAccessExecutionRole.html
    "service-role/AWSLambdaVPCAccessExecutionRole": (
        Statement(
            "Allow",
            (
                *_LOGS,
                "ec2:CreateNetworkInterface",
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeSubnets",
                "ec2:DeleteNetworkInterface",
                "ec2:AssignPrivateIpAddresses",
                "ec2:UnassignPrivateIpAddresses",
            ),
            ("*",),
        ),
    ),
    "AWSXRayDaemonWriteAccess": _XRAY,
    "AWSXrayWriteOnlyAccess": _XRAY,
}


def aws_managed(arn: str) -> tuple[Statement, ...]:
    """The statements of the AWS managed policy `arn` (`arn:<partition>:iam::aws:policy/<name>`).

    Raises:
        UnevaluableError: a policy the emulator does not know (it cannot tell what it allows).
    """
    name = arn.partition(":iam::aws:policy/")[2]
    if name not in AWS_MANAGED:
        raise UnevaluableError(f"the AWS managed policy {arn} is not one the emulator knows")
    return AWS_MANAGED[name]


@dataclass(frozen=True)
class Role:
    """An execution role as deployed."""

    logical_id: str
    name: str
    arn: str
    statements: tuple[Statement, ...]
    managed_policies: tuple[str, ...] = ()
    """The ARNs of the managed policies attached (AWS's and the stack's own)."""
    unchecked: str = ""
    """Why the emulator cannot evaluate this role (then its calls are allowed): empty when it can."""

    def allows(self, action: str, resource: str) -> bool:
        matching = [statement for statement in self.statements if statement.covers(action, resource)]
        return any(s.effect == "Allow" for s in matching) and not any(s.effect == "Deny" for s in matching)

    def refusal(self, function: str, action: str, resource: str) -> str:
        """AWS's AccessDenied message for this role's session in `function`."""
        session = f"arn:aws:sts::{self.arn.split(':')[4]}:assumed-role/{self.name}/{function}"
        return (
            f"User: {session} is not authorized to perform: {action} on resource: {resource} "
            f"because no identity-based policy allows the {action} action"
        )


@dataclass(frozen=True)
class Call:
    """One AWS API call a container made, as the emulator saw it."""

    function: str
    action: str
    resources: tuple[str, ...]
    allowed: bool
    """Whether the caller's role allows it."""
    container: str = ""
    """The container that made it (the access key it was given), when known."""
    throttled: bool = False
    """Allowed, but answered ThrottlingException (Parameter Store's throughput: `throughput`)."""


@dataclass
class CallLog:
    """Every AWS API call the stack's containers made, in order (the recording docs/deploy.md's network table is
    checked against)."""

    calls: list[Call] = field(default_factory=list)

    def record(self, call: Call) -> None:
        self.calls.append(call)

    def services(self, function: str) -> set[str]:
        """The services `function` called (`dynamodb`, `ssm`, `lambda`)."""
        return {call.action.split(":")[0] for call in self.calls if call.function == function}

    def denied(self) -> list[Call]:
        return [call for call in self.calls if not call.allowed]


def check(role: Role, function: str, action: str, resources: Iterable[str]) -> str | None:
    """None when `role` allows `action` on every resource (or cannot be evaluated), else the AccessDenied message for
    the first it does not."""
    if role.unchecked:
        return None
    for resource in resources:
        if not role.allows(action, resource):
            return role.refusal(function, action, resource)
    return None


_CREDENTIAL = re.compile(r"Credential=([A-Za-z0-9]+)/")


@dataclass(frozen=True)
class Identity:
    """Who a container is to AWS: its function, the role it runs with (None: a role the stack does not define,
    whose calls are recorded but not checked), and the container itself (its access key)."""

    function: str
    role: Role | None
    container: str = ""


@dataclass
class Identities:
    """The credentials the stack's containers are given, one access key per container (as each Lambda execution
    environment gets its own session credentials for its function's role), and the identity each stands for. A
    request names its key in its SigV4 `Authorization` header; the signature itself is not checked, as the key is
    known only to the containers' environment."""

    by_key: dict[str, Identity] = field(default_factory=dict)

    def issue(self, function: str, role: Role | None) -> dict[str, str]:
        """The environment that makes a new container of `function`, running with `role`."""
        key = "ASIA" + secrets.token_hex(8).upper()
        self.by_key[key] = Identity(function, role, key)
        return {"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "local"}

    def of(self, authorization: str | None) -> Identity | None:
        """The identity whose key signed a request, None for a key the stack did not issue (or no signature)."""
        match = _CREDENTIAL.search(authorization or "")
        return self.by_key.get(match.group(1)) if match else None


def stack_roles(resolver: Resolver) -> dict[str, Role]:
    """The stack's IAM roles by ARN, each with the statements of every policy attached to it: its inline policies,
    the managed policies it names (the stack's own `AWS::IAM::ManagedPolicy`, or AWS's), and the stack's managed
    policies and `AWS::IAM::Policy` resources that name it in their `Roles`; a role with one the emulator cannot
    evaluate is `unchecked`."""
    own: dict[str, tuple[Statement, ...] | str] = {}
    attached: dict[str, list[Statement | str]] = {}
    for kind in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"):
        for logical_id in resolver.created(kind):
            properties = resolver.properties(logical_id)
            found: tuple[Statement, ...] | str
            try:
                found = statements(properties.get("PolicyDocument") or {}, logical_id)
            except UnevaluableError as error:
                found = str(error)
            if kind == "AWS::IAM::ManagedPolicy":
                own[str(resolver.ref(logical_id))] = found
            for role_name in properties.get("Roles") or ():
                attached.setdefault(str(role_name), []).extend([found] if isinstance(found, str) else found)
    roles: dict[str, Role] = {}
    for logical_id in resolver.created("AWS::IAM::Role"):
        properties = resolver.properties(logical_id)
        name = str(resolver.ref(logical_id))
        managed = tuple(str(arn) for arn in properties.get("ManagedPolicyArns") or ())
        granted: list[Statement | str] = []
        for policy in properties.get("Policies") or ():
            try:
                granted.extend(statements(policy.get("PolicyDocument") or {}, logical_id))
            except UnevaluableError as error:
                granted.append(str(error))
        for arn in managed:
            try:
                policy = own[arn] if arn in own else aws_managed(arn)
            except UnevaluableError as error:
                policy = str(error)
            granted.extend([policy] if isinstance(policy, str) else policy)
        granted.extend(attached.get(name, ()))
        reasons = [item for item in granted if isinstance(item, str)]
        evaluated = tuple(item for item in granted if isinstance(item, Statement))
        arn = str(resolver.get_att(logical_id, "Arn"))
        roles[arn] = Role(logical_id, name, arn, evaluated, managed, "; ".join(reasons))
    return roles
