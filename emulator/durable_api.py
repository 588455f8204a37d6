"""The durable-execution side of the emulator's Lambda API: starting an execution by invoking a durable function, and
the `2025-12-01` paths (checkpoints and state for the SDK in the worker's containers; callbacks, stop and listing for
the serving functions), forwarded to the local durable execution service (`durable_service`).

What it holds to, from AWS's documentation:

- a durable function runs executions of a version or alias only: an Invoke naming the unqualified function is refused
  400 `InvalidParameterValueException` (https://docs.aws.amazon.com/lambda/latest/dg/durable-invoking.html);
- the execution name (`X-Amz-Durable-Execution-Name`) admits one execution: a second start is refused 409
  `DurableExecutionAlreadyStartedException` (https://docs.aws.amazon.com/lambda/latest/dg/
  durable-execution-idempotency.html);
- an asynchronous start answers 202 at once, the execution running in the background;
- with IAM enforced, each call is checked against the caller's role, on the function's execution ARNs
  (`<function ARN>:<qualifier>/durable-execution/...`, https://docs.aws.amazon.com/lambda/latest/dg/
  durable-security.html). A callback's id does not name its execution, so a callback is checked on the function's
  executions as a whole (`<function ARN>:*`), which is what the template grants.

The service is built when the first request needs it, so a stack without a durable function never imports the
testing SDK (the `local` extra brings it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx

from stratus.emulator.events import Answer, json_answer
from stratus.emulator.iam import Call, CallLog, Identities, check
from stratus.types import Scope

if TYPE_CHECKING:
    from stratus.emulator.containers import FunctionPool
    from stratus.emulator.durable_service import DurableService

_EXECUTION = re.compile(r"^/2025-12-01/durable-executions/([^/]+)/(checkpoint|state|stop|history)$")
_CALLBACK = re.compile(r"^/2025-12-01/durable-execution-callbacks/([^/]+)/(succeed|fail|heartbeat)$")
_LIST = re.compile(r"^/2025-12-01/functions/([^/]+)/durable-executions$")
_ACTIONS = {
    "checkpoint": "lambda:CheckpointDurableExecution",
    "state": "lambda:GetDurableExecutionState",
    "stop": "lambda:StopDurableExecution",
    "history": "lambda:GetDurableExecutionHistory",
    "succeed": "lambda:SendDurableExecutionCallbackSuccess",
    "fail": "lambda:SendDurableExecutionCallbackFailure",
    "heartbeat": "lambda:SendDurableExecutionCallbackHeartbeat",
}
_FORWARDED_HEADERS = ("content-type",)


class DurableApi:
    """Starts and serves the stack's durable executions."""

    def __init__(
        self,
        pools: Mapping[str, FunctionPool],
        service: Callable[[], DurableService],
        *,
        identities: Identities | None = None,
        calls: CallLog | None = None,
    ) -> None:
        self.pools = pools
        self._service_factory = service
        self._service: DurableService | None = None
        self._http: httpx.AsyncClient | None = None
        self.identities = identities
        self.calls = calls

    @property
    def service(self) -> DurableService:
        if self._service is None:
            self._service = self._service_factory()
        return self._service

    async def aclose(self) -> None:
        if self._service is not None:
            self._service.close()
        if self._http is not None:
            await self._http.aclose()

    def start(self, pool: FunctionPool, qualifier: str | None, name: str, event: Any, kind: str) -> Answer:
        """An Invoke of a durable function: the start of an execution."""
        from stratus.emulator.durable_service import AlreadyStartedError

        if not qualifier or qualifier == "$LATEST":
            message = "Durable functions can only be invoked with a qualified ARN (a version or an alias)."
            return _error(400, message, "InvalidParameterValueException")
        if kind != "Event":
            message = "Stratus's emulator starts durable executions asynchronously only (InvocationType=Event)."
            return _error(400, message, "InvalidParameterValueException")
        try:
            self.service.start(pool, qualifier, name or _fresh_name(), event)
        except AlreadyStartedError:
            message = f"Durable execution with name {name} already started."
            return _error(409, message, "DurableExecutionAlreadyStartedException")
        return json_answer(202, {})

    async def forward(self, scope: Scope, path: str, headers: Mapping[bytes, bytes], body: bytes) -> Answer:
        """A `2025-12-01` request, checked against the caller's role, answered by the service."""
        refusal = self._refusal(headers.get(b"authorization", b""), path)
        if refusal is not None:
            return json_answer(403, {"Message": refusal}, ("x-amzn-ErrorType", "AccessDeniedException"))
        if (listing := _LIST.match(path)) is not None:  # by name, ARN or qualified ARN: the service keys by name
            path = f"/2025-12-01/functions/{_function_name(listing.group(1))}/durable-executions"
        query = scope.get("query_string", b"").decode("latin-1")
        url = f"{self.service.url}{path}" + (f"?{query}" if query else "")
        sent = {
            name: headers[name.encode()].decode("latin-1") for name in _FORWARDED_HEADERS if name.encode() in headers
        }
        if self._http is None:  # one client for all: building one (its TLS context) takes longer than a checkpoint
            self._http = httpx.AsyncClient(timeout=30)
        answered = await self._http.request(scope["method"], url, content=body, headers=sent)
        kept = [
            (name, value)
            for name, value in answered.headers.items()
            if name.lower().startswith(("content-type", "x-amzn"))
        ]
        return Answer(answered.status_code, kept, answered.content)

    def _refusal(self, authorization: bytes, path: str) -> str | None:
        identity = self.identities.of(authorization.decode("latin-1")) if self.identities else None
        if identity is None or identity.role is None:
            return None
        action, resource = self._action(path)
        if action is None:
            return None
        refusal = check(identity.role, identity.function, action, [resource])
        if self.calls is not None:
            self.calls.record(Call(identity.function, action, (resource,), refusal is None, identity.container))
        return refusal

    def _action(self, path: str) -> tuple[str | None, str]:
        durable = [pool.function for pool in self.pools.values() if pool.function.durable is not None]
        whole = f"{durable[0].arn}:*" if durable else "*"
        if (matched := _EXECUTION.match(path)) is not None:
            return _ACTIONS[matched.group(2)], _aws_execution_arn(matched.group(1), self.pools) or whole
        if (matched := _CALLBACK.match(path)) is not None:
            return _ACTIONS[matched.group(2)], whole
        if (matched := _LIST.match(path)) is not None:
            pool = self.pools.get(_function_name(matched.group(1)))
            return "lambda:ListDurableExecutionsByFunction", pool.function.arn if pool else whole
        return None, whole


def _aws_execution_arn(local_arn: str, pools: Mapping[str, FunctionPool]) -> str | None:
    """The execution's ARN in AWS's form (`<function ARN>:<qualifier>/durable-execution/<name>/<id>`) for the local
    service's (`arn:aws:lambda:<region>:<account>:durable-execution:<function>:<name>:<id>`)."""
    from urllib.parse import unquote

    parts = unquote(local_arn).split(":")
    if len(parts) < 9 or parts[5] != "durable-execution":
        return None
    pool = pools.get(parts[6])
    if pool is None:
        return None
    return f"{pool.function.arn}:live/durable-execution/{parts[7]}/{parts[8]}"


def _function_name(segment: str) -> str:
    """The function a path segment names: a name, an ARN or a qualified ARN, percent-encoded or not."""
    from urllib.parse import unquote

    parts = unquote(segment).split(":")
    return parts[6] if len(parts) >= 7 and parts[0] == "arn" else parts[0]


def _fresh_name() -> str:
    import uuid

    return str(uuid.uuid4())


def _error(status: int, message: str, error_type: str) -> Answer:
    return json_answer(status, {"Type": "User", "Message": message}, ("x-amzn-ErrorType", error_type))
