"""Lambda's own Invoke API (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html), for the functions of
the stack that invoke each other (`STRATUS_TASK_WORKER`: the task worker, invoked with `InvocationType=Event` by
`stratus.handlers.task_worker.LambdaLauncher`'s boto3 client).

The containers reach it through `AWS_ENDPOINT_URL_LAMBDA`. `Event` invocations (at most 1 MB, else 413
`RequestTooLargeException`) are accepted with 202 and delivered in the background by Lambda's event queue
(`event_queue`: retries, maximum age, destinations, duplicates); `RequestResponse` ones answer the function's
payload, or its error with `X-Amz-Function-Error: Unhandled`; a throttled `RequestResponse` one (no container free,
none may start) is answered 429 `TooManyRequestsException` with its `Reason`
(https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html#API_Invoke_Errors), while `Event` ones wait in the
queue for a container, as Lambda's event queue does (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html).

`GET <AWS_ENDPOINT_URL_LAMBDA>/stratus/bill` answers the bill so far (`billing.Bill.summary`): JSON, function name
to `{"invocations", "billedMs", "gbSeconds", "memoryMb"}`, under the same secret and Host checks as Invoke.

What binds it to the stack's own containers: it runs any event it is given (authorizer claims included), so a
page in the developer's browser must not reach it, by DNS rebinding or otherwise. Every request must carry

- the per-stack secret, a random path segment (`/<secret>/2015-03-31/functions/...`) that exists only in the
  containers' environment: `AWS_ENDPOINT_URL_LAMBDA` is `http://127.0.0.1:<port>/<secret>`, and boto3 (any AWS SDK
  given that endpoint) keeps the endpoint's path in front of the operation's. `stratus local` prints that URL for
  the developer (`aws lambda invoke --endpoint-url ...`, the sweeper say): a page can read neither a terminal nor
  a process's environment. Signatures are not checked: the containers' credentials are the developer's or
  `local`, which a page could know, so a SigV4 signature would add nothing the secret does not give;
- a Host naming the loopback address and port it listens on (`127.0.0.1:<port>`, `localhost:<port>`, or the
  address `stratus local` was told to listen on), which a rebound name never is;
- no content type, or a JSON or octet-stream one (what the SDKs send), never one a page can send cross-origin
  without asking (`text/plain`, forms).

A request without the secret or with another Host is refused as AWS refuses an unsigned caller (403
`UnrecognizedClientException`), one with another content type with 415 `UnsupportedMediaTypeException`, before
its body is read or any function runs.

With IAM enforced, an Invoke signed with a container's key is checked against that container's role; one with no
`Authorization` at all is refused 403 `MissingAuthenticationTokenException`, as AWS refuses it, so a call that
skips signing never skips the role. A key the stack did not issue is the developer's (`aws lambda invoke
--endpoint-url ...` with their own credentials), which no role binds.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
from collections.abc import Mapping
from urllib.parse import parse_qs

from stratus.emulator.billing import Bill
from stratus.emulator.containers import INVOKE_PAYLOAD_BYTES, FunctionPool, ThrottledError
from stratus.emulator.durable_api import DurableApi
from stratus.emulator.event_queue import EVENT_PAYLOAD_BYTES, EventQueue, invoke_once
from stratus.emulator.events import Answer, json_answer
from stratus.emulator.iam import Call, CallLog, Identities, check
from stratus.emulator.proxy_integration import read_limited, send_answer
from stratus.types import Receive, Scope, Send

_INVOKE_PATH = re.compile(r"^/([^/]*)/2015-03-31/functions/([^/]+)/invocations$")
_DURABLE_PATH = re.compile(r"^/([^/]*)(/2025-12-01/.+)$")
_BILL_PATH = re.compile(r"^/([^/]*)/stratus/bill$")
_CONTENT_TYPES = {"", "application/json", "application/octet-stream", "binary/octet-stream"}
"""What the SDKs send for Invoke's payload (boto3 sends none): never a type a page may send without a preflight."""
_LOOPBACK_NAMES = ("127.0.0.1", "localhost")
_NAME_IN_ARN = re.compile(r"(?:arn:[^:]+:lambda:[^:]+:\d+:function:)?([A-Za-z0-9_-]+)(?::([A-Za-z0-9$_-]+))?$")


class LambdaApi:
    """An ASGI app answering Invoke for the stack's functions."""

    kind = "Lambda API"
    logical_id = "Invoke"

    def __init__(
        self,
        pools: Mapping[str, FunctionPool],
        events: EventQueue,
        *,
        host: str = "127.0.0.1",
        bill: Bill | None = None,
        identities: Identities | None = None,
        calls: CallLog | None = None,
        durable: DurableApi | None = None,
    ) -> None:
        self.pools = pools
        self.durable = durable
        """The durable execution service's API, when the stack has a durable function (`durable_api`)."""
        self.events = events
        """Where `Event` invocations go."""
        self.bill = bill
        self.identities = identities
        """With these, a container's Invoke is checked against its role (a key the stack did not issue is the
        developer's, as the endpoint's secret already vouches for it)."""
        self.calls = calls
        self.host = host
        """The address it listens on: a Host naming it (with its port) is accepted beside the loopback names."""
        self._secret = secrets.token_urlsafe(32)

    def endpoint(self, base: str) -> str:
        """The URL the stack's containers are given (`AWS_ENDPOINT_URL_LAMBDA`): `base` with the stack's secret."""
        return f"{base}/{self._secret}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        matched = _INVOKE_PATH.match(scope["path"])
        billing = _BILL_PATH.match(scope["path"])
        # The raw path: an execution's ARN is one segment, its `:` and `/` percent-encoded (the decoded path splits it).
        raw_path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1").split("?")[0]
        durable = _DURABLE_PATH.match(raw_path) if self.durable is not None else None
        found = matched or billing or durable
        secret = found.group(1) if found else ""
        known = hmac.compare_digest(secret.encode(), self._secret.encode())
        if not (known and self._serves_host(scope, headers.get(b"host", b""))):
            await send_answer(send, _unrecognized_client())
            return
        if billing:
            summary = self.bill.summary() if self.bill is not None and scope["method"] == "GET" else None
            if summary is None:
                await send_answer(send, _user_error(404, "Not found", "ResourceNotFoundException"))
            else:
                await send_answer(send, json_answer(200, summary))
            return
        media_type = headers.get(b"content-type", b"").decode("latin-1").split(";")[0].strip().lower()
        if media_type not in _CONTENT_TYPES:
            message = "The content type of the Invoke request body is not JSON."
            await send_answer(send, _user_error(415, message, "UnsupportedMediaTypeException"))
            return
        body, too_large = await read_limited(receive, INVOKE_PAYLOAD_BYTES)
        if durable is not None:
            assert self.durable is not None
            await send_answer(send, await self.durable.forward(scope, durable.group(2), headers, body))
            return
        name = _NAME_IN_ARN.match(matched.group(2)) if matched else None
        pool = self.pools.get(name.group(1)) if name else None
        if scope["method"] != "POST" or pool is None:
            await send_answer(send, _user_error(404, "Function not found", "ResourceNotFoundException"))
            return
        if too_large:
            await send_answer(send, _user_error(413, "Request payload too large", "RequestTooLargeException"))
            return
        assert name is not None
        if self.identities is not None and not headers.get(b"authorization", b"").strip():
            await send_answer(send, _missing_authentication())
            return
        refusal = self._refusal(headers.get(b"authorization", b""), pool, name.group(2), scope)
        if refusal is not None:
            await send_answer(
                send, json_answer(403, {"Message": refusal}, ("x-amzn-ErrorType", "AccessDeniedException"))
            )
            return
        try:
            event = json.loads(body or b"{}")
        except ValueError:
            message = "Could not parse request body into json"
            await send_answer(send, _user_error(400, message, "InvalidRequestContentException"))
            return
        kind = headers.get(b"x-amz-invocation-type", b"RequestResponse").decode("latin-1")
        if pool.function.durable is not None and self.durable is not None:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            qualifier = name.group(2) or next(iter(query.get("Qualifier", ())), None)
            execution = headers.get(b"x-amz-durable-execution-name", b"").decode("latin-1")
            await send_answer(send, self.durable.start(pool, qualifier, execution, event, kind))
            return
        if kind == "Event":
            if len(body) > EVENT_PAYLOAD_BYTES:
                await send_answer(send, _user_error(413, "Request payload too large", "RequestTooLargeException"))
                return
            self.events.accept(pool, event)
            await send_answer(send, json_answer(202, {}))
            return
        try:
            payload, error = await invoke_once(pool, event)
        except ThrottledError as throttled:
            answer = json_answer(
                429,
                {"Reason": throttled.reason, "Type": "User", "message": "Rate Exceeded."},
                ("x-amzn-ErrorType", "TooManyRequestsException"),
            )
            await send_answer(send, answer)
            return
        extra = [("x-amz-function-error", "Unhandled")] if error else []
        await send_answer(send, json_answer(200, payload, *extra))

    def _refusal(self, authorization: bytes, pool: FunctionPool, qualifier: str | None, scope: Scope) -> str | None:
        """IAM's AccessDenied message when a container's role may not invoke `pool`'s function (at `qualifier`, from
        the ARN or the `Qualifier` parameter: a grant on the unqualified ARN covers only unqualified calls,
        https://docs.aws.amazon.com/lambda/latest/dg/permissions-user-function.html)."""
        identity = self.identities.of(authorization.decode("latin-1")) if self.identities else None
        if identity is None:
            return None
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        qualifier = qualifier or next(iter(query.get("Qualifier", ())), None)
        resource = pool.function.arn + (f":{qualifier}" if qualifier else "")
        refusal = (
            check(identity.role, identity.function, "lambda:InvokeFunction", [resource]) if identity.role else None
        )
        if self.calls is not None:
            self.calls.record(
                Call(identity.function, "lambda:InvokeFunction", (resource,), refusal is None, identity.container)
            )
        return refusal

    def _serves_host(self, scope: Scope, host: bytes) -> bool:
        """Whether `host` names the address this API listens on: a loopback name, or the one it was told, with its
        port."""
        server = scope.get("server")
        if not server or server[1] is None:
            return False
        port = server[1]
        accepted = {f"{name}:{port}" for name in (*_LOOPBACK_NAMES, self.host)}
        return host.decode("latin-1").lower() in accepted


def _unrecognized_client() -> Answer:
    """AWS's answer to a caller it cannot identify (an unsigned or foreign request)."""
    message = "The security token included in the request is invalid."
    return json_answer(403, {"message": message}, ("x-amzn-ErrorType", "UnrecognizedClientException"))


def _missing_authentication() -> Answer:
    """AWS's answer to an unsigned request (https://docs.aws.amazon.com/lambda/latest/api/CommonErrors.html lists
    the 403s; an unsigned call gets `MissingAuthenticationToken`)."""
    return json_answer(
        403, {"message": "Missing Authentication Token"}, ("x-amzn-ErrorType", "MissingAuthenticationTokenException")
    )


def _user_error(status: int, message: str, error_type: str) -> Answer:
    """The Invoke API's answer to a request it refuses."""
    return json_answer(status, {"Type": "User", "Message": message}, ("x-amzn-ErrorType", error_type))
