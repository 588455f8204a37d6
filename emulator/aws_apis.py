"""The AWS APIs the stack's containers call (DynamoDB, SSM), each call checked against the caller's execution role
before it is sent on, as AWS checks it.

A container reaches each through its `AWS_ENDPOINT_URL_<SERVICE>`, which `stratus local` points here
(`http://127.0.0.1:<port>/<service>`; botocore keeps an endpoint's path for these JSON APIs, whose operations are
all `POST /`) in place of the endpoint it was given (moto's server). The caller is the function whose access key
signed the request (`iam.Identities`); the action and the resources are read from the request as IAM reads them:

- DynamoDB: `dynamodb:<operation>` on the table's ARN (an index's, `table/<name>/index/<index>`, for a Query or Scan
  of one). A `TransactWriteItems` is authorised item by item, as its Put, Update, Delete or ConditionCheck, and a
  `TransactGetItems` as GetItem on each table
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html); the batch
  operations are their own actions on every table they name
  (https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html);
- SSM: `ssm:<operation>` on each parameter's ARN, `parameter/<name without its leading slash>`
  (https://docs.aws.amazon.com/systems-manager/latest/userguide/sysman-paramstore-access.html).

A refused call is answered as these APIs answer it: 400 `AccessDeniedException`, with IAM's message naming the
role's session, the action and the resource; an unknown key gets 400 `UnrecognizedClientException`. An allowed SSM
read past Parameter Store's throughput (`ssm_tps`, default the documented 40 a second: `throughput`) gets 400
`ThrottlingException`. Every call, allowed, refused or throttled, is recorded with the container that made it
(`iam.CallLog`): the functions' network needs in docs/deploy.md are checked against it.

moto runs the action a request's query string or form-shaped body names (`Action=`) in place of its `X-Amz-Target`,
and picks the service by the credential scope of its `Authorization`. So a request is forwarded only when the action
checked is the one moto will run: a `POST` to the service's root, with no query string, signed for that service,
whose `X-Amz-Target` names that service, and whose body names no other `Action` (else 400, and nothing runs). These
JSON APIs never send any of those (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.LowLevelAPI.html).

A local table that stands in for the template's (`STRATUS_STORE=dynamodb://<local>` where the template names its
`StateTable`) is checked as the template's: `stand_ins` maps the one ARN to the other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

import httpx

from stratus.emulator.capacity_units import consumed
from stratus.emulator.events import Answer, json_answer
from stratus.emulator.iam import Call, CallLog, Identities, check
from stratus.emulator.intrinsics import ACCOUNT_ID
from stratus.emulator.proxy_integration import read_limited, send_answer
from stratus.emulator.throughput import SSM_STANDARD_TPS, SSM_THROTTLED_OPERATIONS, Throughput
from stratus.types import ASGIApp, Receive, Scope, Send

SERVICES = ("dynamodb", "ssm")
"""The services proxied, by the name of their `AWS_ENDPOINT_URL_<SERVICE>` variable (lower case)."""
REQUEST_BYTES = 16 * 1024 * 1024
FORWARD_TIMEOUT_SECONDS = 30.0
_TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
_HOP_BY_HOP = {b"host", b"content-length", b"connection", b"transfer-encoding", b"keep-alive"}
_TARGET_PREFIXES = {"dynamodb": "DynamoDB_20120810.", "ssm": "AmazonSSM."}
_SIGNED_SERVICE = re.compile(r"Credential=[^/,\s]*/[^/,\s]*/[^/,\s]*/([^/,\s]*)/")


def _table(region: str, name: Any, index: Any = None) -> str:
    arn = f"arn:aws:dynamodb:{region}:{ACCOUNT_ID}:table/{name}"
    return f"{arn}/index/{index}" if index else arn


def dynamodb_authorisations(operation: str, body: Mapping[str, Any], region: str) -> list[tuple[str, list[str]]]:
    """The (action, resources) pairs IAM checks for one DynamoDB call."""
    if operation == "TransactWriteItems":
        pairs: dict[str, list[str]] = {}
        for item in body.get("TransactItems") or ():
            for kind, request in item.items():
                pairs.setdefault(f"dynamodb:{_TRANSACTION_ACTIONS.get(kind, kind)}", []).append(
                    _table(region, request.get("TableName"))
                )
        return list(pairs.items())
    if operation == "TransactGetItems":
        tables = [
            _table(region, item["Get"].get("TableName")) for item in body.get("TransactItems") or () if "Get" in item
        ]
        return [("dynamodb:GetItem", tables)]
    if operation in ("BatchGetItem", "BatchWriteItem"):
        return [(f"dynamodb:{operation}", [_table(region, name) for name in body.get("RequestItems") or {}])]
    if "TableName" in body:
        return [(f"dynamodb:{operation}", [_table(region, body["TableName"], body.get("IndexName"))])]
    return [(f"dynamodb:{operation}", ["*"])]


def ssm_authorisations(operation: str, body: Mapping[str, Any], region: str) -> list[tuple[str, list[str]]]:
    """The (action, resources) pairs IAM checks for one SSM call."""
    names = body.get("Names") or ([body["Name"]] if "Name" in body else [])
    resources = [f"arn:aws:ssm:{region}:{ACCOUNT_ID}:parameter/{str(name).lstrip('/')}" for name in names]
    return [(f"ssm:{operation}", resources or ["*"])]


_AUTHORISATIONS = {"dynamodb": dynamodb_authorisations, "ssm": ssm_authorisations}


class AwsApis:
    """An ASGI app in front of the AWS APIs in `targets` (service to endpoint URL)."""

    kind = "AWS APIs"
    logical_id = "AwsApis"

    def __init__(
        self,
        targets: Mapping[str, str],
        identities: Identities,
        log: CallLog,
        *,
        region: str,
        stand_ins: Mapping[str, str] | None = None,
        ssm_tps: float = SSM_STANDARD_TPS,
        traces: ASGIApp | None = None,
        meter: Callable[[str, float, float], None] | None = None,
    ) -> None:
        """`ssm_tps`: Parameter Store's throughput for the stack's account and Region (0: unlimited); `traces`: what
        answers `POST /v1/traces` (the containers' spans, `trace_receiver`), when it is on; `meter`: told the function,
        read and write request units of each DynamoDB request that succeeded (`capacity_units`)."""
        self.meter = meter
        self.targets = dict(targets)
        self.traces = traces
        self.identities = identities
        self.log = log
        self.region = region
        self.stand_ins = dict(stand_ins or {})
        self.ssm_throughput = Throughput(ssm_tps) if ssm_tps > 0 else None
        self._client: httpx.AsyncClient | None = None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    def _as_declared(self, resource: str) -> str:
        for local, declared in self.stand_ins.items():
            if resource == local or resource.startswith(local + "/"):
                return declared + resource[len(local) :]
        return resource

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if self.traces is not None and scope["path"] == "/v1/traces":  # OTLP/HTTP's path, not an AWS API's
            refusal = self._traces_refusal(dict(scope["headers"]))
            if refusal is not None:
                await send_answer(send, _error(403, "AccessDeniedException", refusal))
                return
            await self.traces(scope, receive, send)
            return
        service, _, rest = scope["path"].lstrip("/").partition("/")
        headers = dict(scope["headers"])
        if service not in self.targets:
            await send_answer(send, _error(404, "UnknownOperationException", f"no emulated service {service!r}"))
            return
        identity = self.identities.of(headers.get(b"authorization", b"").decode("latin-1"))
        if identity is None:
            message = "The security token included in the request is invalid."
            await send_answer(send, _error(400, "UnrecognizedClientException", message))
            return
        body, too_large = await read_limited(receive, REQUEST_BYTES)
        if too_large:
            await send_answer(send, _error(413, "RequestEntityTooLarge", "Request entity too large"))
            return
        target = headers.get(b"x-amz-target", b"").decode("latin-1")
        operation = target.rpartition(".")[2]
        other = _runs_otherwise(service, scope, rest, headers, target, body)
        if other is not None:
            await send_answer(send, _error(400, "AccessDeniedException", other))
            return
        try:
            parsed = json.loads(body or b"{}")
        except ValueError:
            parsed = {}
        checked: list[tuple[str, tuple[str, ...], str | None]] = []
        for action, resources in _AUTHORISATIONS[service](
            operation, parsed if isinstance(parsed, dict) else {}, self.region
        ):
            declared = tuple(self._as_declared(resource) for resource in resources)
            checked.append(
                (action, declared, check(identity.role, identity.function, action, declared) if identity.role else None)
            )
        denied = next((refusal for _, _, refusal in checked if refusal is not None), None)
        throttled = denied is None and not self._admits(service, operation)
        for action, declared, refusal in checked:
            self.log.record(
                Call(
                    identity.function,
                    action,
                    declared,
                    refusal is None,
                    container=identity.container,
                    throttled=throttled,
                )
            )
        if denied is not None:
            await send_answer(send, _error(400, "AccessDeniedException", denied))
            return
        if throttled:
            await send_answer(send, _error(400, "ThrottlingException", "Rate exceeded"))
            return
        answer = await self._forward(scope, service, rest, body)
        if self.meter is not None and service == "dynamodb" and answer.status == 200 and isinstance(parsed, dict):
            reads, writes = consumed(operation, parsed, json.loads(answer.body or b"{}"))
            self.meter(identity.function, reads, writes)
        await send_answer(send, answer)

    def _traces_refusal(self, headers: Mapping[bytes, bytes]) -> str | None:
        """Spans signed with SigV4 are sent to X-Ray's OTLP endpoint (`STRATUS_TRACING=xray`), which authorizes them
        as `xray:PutTraceSegments` (https://docs.aws.amazon.com/xray/latest/devguide/
        xray-opentelemetry-bearer-token.html): checked against the sender's role, as X-Ray would. Unsigned ones are
        a collector's (`stratus local --traces`), which takes them as they come."""
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        if not authorization:
            return None
        identity = self.identities.of(authorization)
        if identity is None:
            return "The security token included in the request is invalid."
        action, resources = "xray:PutTraceSegments", ("*",)
        refusal = check(identity.role, identity.function, action, resources) if identity.role else None
        self.log.record(Call(identity.function, action, resources, refusal is None, container=identity.container))
        return refusal

    def _admits(self, service: str, operation: str) -> bool:
        """Whether Parameter Store's throughput leaves room for this call (only its reads count)."""
        if service != "ssm" or operation not in SSM_THROTTLED_OPERATIONS or self.ssm_throughput is None:
            return True
        return self.ssm_throughput.admits()

    async def _forward(self, scope: Scope, service: str, rest: str, body: bytes) -> Answer:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=FORWARD_TIMEOUT_SECONDS)
        query = scope.get("query_string", b"").decode("latin-1")
        url = f"{self.targets[service].rstrip('/')}/{rest}" + (f"?{query}" if query else "")
        headers = [(name, value) for name, value in scope["headers"] if name.lower() not in _HOP_BY_HOP]
        response = await self._client.request(scope["method"], url, headers=headers, content=body)
        kept = [
            (name, value)
            for name, value in response.headers.items()
            if name.lower().encode() not in _HOP_BY_HOP and name.lower() != "content-encoding"
        ]
        return Answer(response.status_code, kept, response.content)


def _runs_otherwise(
    service: str, scope: Scope, rest: str, headers: Mapping[bytes, bytes], target: str, body: bytes
) -> str | None:
    """Why moto would run something other than the target's operation of `service` (the refusal's message), or
    None when it runs exactly that."""
    operation = target.rpartition(".")[2]
    signed = _SIGNED_SERVICE.search(headers.get(b"authorization", b"").decode("latin-1"))
    if scope["method"] != "POST" or rest.strip("/") or scope.get("query_string"):
        return f"stratus local forwards only a POST to the {service} API's root, with no query string"
    if not target.startswith(_TARGET_PREFIXES[service]) or not operation:
        return f"X-Amz-Target {target!r} names no {service} operation"
    if signed is None or signed.group(1) != service:
        return f"the request is not signed for {service}, so moto would run it as another service"
    named = {
        value for key, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True) if key == "Action"
    }
    if named - {operation}:
        return (
            f"the request names two actions, {operation} (X-Amz-Target) and {', '.join(sorted(named))} (Action= in "
            "its body), and moto would run the second, which IAM did not check"
        )
    return None


def _error(status: int, error_type: str, message: str) -> Answer:
    """The JSON APIs' error shape (botocore reads `__type`)."""
    return json_answer(status, {"__type": error_type, "message": message}, ("x-amzn-ErrorType", error_type))
