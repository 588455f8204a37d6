"""A Lambda Function URL (https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html).

- Access (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html): `AuthType: NONE` serves a request only if
  the function's resource-based policy makes the URL public (both permissions, see `policy`); `AWS_IAM` only a
  request signed with Signature Version 4. Anything else: 403 `{"Message":"Forbidden"}`.
- CORS (https://docs.aws.amazon.com/lambda/latest/dg/urls-configuration.html#urls-cors): preflights are answered by
  the URL only when it has a CORS configuration; otherwise they reach the function.
- Events are payload format 2.0 with route `$default`; `InvokeMode: RESPONSE_STREAM` relays the answer as it is
  written, up to 200 MB (https://docs.aws.amazon.com/lambda/latest/dg/configuration-response-streaming.html),
  `BUFFERED` returns it whole, up to 6 MB; a request is at most 6 MB
  (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). The function's own timeout is the
  only one.
- A function error or a malformed answer: 502.
- A throttled invocation (no container free, none may start): 429 `{"Message":"Rate Exceeded."}`
  with `x-amzn-ErrorType: TooManyRequestsException`, Lambda's own throttle answer
  (https://docs.aws.amazon.com/lambda/latest/dg/troubleshooting-invocation.html).
- Response headers pass through as the function wrote them: Lambda documents no renaming for Function URLs (API
  Gateway documents it for the REST API only:
  https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html). Renaming
  `WWW-Authenticate` to `x-amzn-Remapped-WWW-Authenticate` is reported for Function URLs, not documented: with
  `remap_www_authenticate` the door does it (`proxy_integration.REPORTED_REMAPPED`).
"""

from __future__ import annotations

from collections.abc import Mapping

from stratus.emulator.containers import (
    INVOKE_PAYLOAD_BYTES,
    ClientGoneError,
    FunctionError,
    FunctionPool,
    ThrottledError,
)
from stratus.emulator.events import (
    Answer,
    MalformedResponseError,
    Request,
    json_answer,
    read_v2_response,
    v2_event,
)
from stratus.emulator.intrinsics import ACCOUNT_ID
from stratus.emulator.proxy_integration import (
    REPORTED_REMAPPED,
    FrontDoor,
    Invocation,
    preflight,
    read_whole,
    send_answer,
    send_stream,
)
from stratus.emulator.resource_policy import function_url_is_public, is_sigv4_signed
from stratus.emulator.stack import FunctionUrl, Stack
from stratus.types import Send

FORBIDDEN = {"Message": "Forbidden"}
BAD_GATEWAY = {"Message": "Internal Server Error"}
STREAMED_RESPONSE_BYTES = 200 * 1024 * 1024


class FunctionUrlDoor(FrontDoor):
    kind = "Function URL"
    max_request_bytes = INVOKE_PAYLOAD_BYTES

    def __init__(
        self, url: FunctionUrl, stack: Stack, pools: Mapping[str, FunctionPool], *, remap_www_authenticate: bool = False
    ) -> None:
        super().__init__(url.logical_id, pools, remapped=REPORTED_REMAPPED if remap_www_authenticate else ())
        self.url = url
        self.stack = stack

    def too_large(self) -> Answer:
        return json_answer(
            413,
            {"Message": f"Request must be smaller than {INVOKE_PAYLOAD_BYTES} bytes for the InvokeFunction operation"},
        )

    def allowed(self, request: Request) -> bool:
        if self.url.auth_type == "AWS_IAM":
            return is_sigv4_signed(request.header("authorization"), request.query)
        return self.url.auth_type == "NONE" and function_url_is_public(
            self.stack.policy(self.url.function), self.url.qualifier
        )

    async def handle(self, request: Request, send: Send) -> None:
        pool = self.pools.get(self.url.function)
        if pool is None or not self.allowed(request):
            await send_answer(send, json_answer(403, FORBIDDEN, ("x-amzn-ErrorType", "AccessDeniedException")))
            return
        answer = preflight(self.url.cors, request)
        if answer is not None:
            await send_answer(send, answer)
            return
        authorizer = None
        if self.url.auth_type == "AWS_IAM":
            authorizer = {"iam": {"accountId": ACCOUNT_ID, "userArn": "unverified-locally"}}
        event = v2_event(request, api_id=self.url.url_id, route_key="$default", stage="$default", authorizer=authorizer)
        try:
            async with pool.invocation(gone=request.gone) as container:
                invocation = Invocation(pool)
                invoked = await invocation.run(container, event)
                stream = invoked.stream
                if stream is not None and self.url.invoke_mode == "RESPONSE_STREAM":
                    headers = self.integration_headers(stream.headers)
                    await send_stream(send, invocation, container, stream, headers, limit=STREAMED_RESPONSE_BYTES)
                    return
                answer = await read_whole(invocation, container, invoked, read_v2_response)
                answer.headers = self.integration_headers(answer.headers)
        except (FunctionError, MalformedResponseError):
            answer = json_answer(502, BAD_GATEWAY)
        except ThrottledError:
            answer = json_answer(429, {"Message": "Rate Exceeded."}, ("x-amzn-ErrorType", "TooManyRequestsException"))
        except ClientGoneError:
            return  # dropped while it waited: no one to answer
        await send_answer(send, answer)
