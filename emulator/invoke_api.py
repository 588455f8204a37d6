"""Lambda's own Invoke API (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html), for the functions of
the stack that invoke each other (`STRATUS_TASK_WORKER`: the task worker, invoked with `InvocationType=Event`).

The containers reach it through `AWS_ENDPOINT_URL_LAMBDA`. `Event` invocations are accepted with 202 and run on
the target's containers in the background (no retries); `RequestResponse` ones answer the function's payload, or
its error with `X-Amz-Function-Error: Unhandled`. Signatures are not checked.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from typing import Any

from stratus.emulator.containers import INVOKE_PAYLOAD_BYTES, FunctionError, FunctionPool
from stratus.emulator.events import Answer, json_answer
from stratus.emulator.proxy_integration import Invocation, collect, read_limited, send_answer
from stratus.types import Receive, Scope, Send

_INVOKE_PATH = re.compile(r"^/2015-03-31/functions/([^/]+)/invocations$")
_NAME_IN_ARN = re.compile(r"(?:arn:[^:]+:lambda:[^:]+:\d+:function:)?([A-Za-z0-9_-]+)(?::[A-Za-z0-9$_-]+)?$")


class LambdaApi:
    """An ASGI app answering Invoke for the stack's functions."""

    kind = "Lambda API"
    logical_id = "Invoke"

    def __init__(self, pools: Mapping[str, FunctionPool]) -> None:
        self.pools = pools
        self._running: set[asyncio.Task[Any]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body, too_large = await read_limited(receive, INVOKE_PAYLOAD_BYTES)
        matched = _INVOKE_PATH.match(scope["path"])
        name = _NAME_IN_ARN.match(matched.group(1)) if matched else None
        pool = self.pools.get(name.group(1)) if name else None
        if scope["method"] != "POST" or pool is None:
            await send_answer(send, _user_error(404, "Function not found", "ResourceNotFoundException"))
            return
        if too_large:
            await send_answer(send, _user_error(413, "Request payload too large", "RequestTooLargeException"))
            return
        event = json.loads(body or b"{}")
        kind = dict(scope["headers"]).get(b"x-amz-invocation-type", b"RequestResponse").decode()
        if kind == "Event":
            task = asyncio.ensure_future(_invoke(pool, event))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
            await send_answer(send, json_answer(202, {}))
            return
        payload, error = await _invoke(pool, event)
        extra = [("x-amz-function-error", "Unhandled")] if error else []
        await send_answer(send, json_answer(200, payload, *extra))


def _user_error(status: int, message: str, error_type: str) -> Answer:
    """The Invoke API's answer to a request it refuses."""
    return json_answer(status, {"Type": "User", "Message": message}, ("x-amzn-ErrorType", error_type))


async def _invoke(pool: FunctionPool, event: Any) -> tuple[Any, bool]:
    try:
        async with pool.invocation() as container:
            invocation = Invocation(pool)
            invoked = await invocation.run(container, event)
            if invoked.stream is not None:
                return (await collect(invocation, container, invoked.stream)).decode(errors="replace"), False
            return invoked.payload, False
    except FunctionError as error:
        return {"errorType": error.error_type, "errorMessage": str(error)}, True
