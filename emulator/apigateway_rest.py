"""An API Gateway REST API (a deployed stage) in front of its Lambda proxy and mock integrations.

- The path starts with a deployed stage (`/v1/mcp`); what follows is matched against the API's resources, literal
  paths over `{variable}`s over a greedy `{proxy+}` (which needs at least one segment: `/v1/` matches only a `/`
  resource), a method over ANY. Anything unmatched, a missing stage among it, gets API Gateway's own 403
  `{"message":"Missing Authentication Token"}` (gateway response MISSING_AUTHENTICATION_TOKEN:
  https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html).
- Lambda proxy integration, payload format 1.0
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html): a function
  error or an answer without `statusCode` gives 502 `{"message": "Internal server error"}`; no permission for API
  Gateway to invoke the function gives 500. Response headers API Gateway reserves are renamed
  `x-amzn-Remapped-<name>`, `WWW-Authenticate` among them, always (`proxy_integration.REST_API_REMAPPED`:
  https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-known-issues.html#api-gateway-known-issues-rest-apis).
- Limits (https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html): 10 MB request payload (413),
  the integration timeout (29 s by default; buffered: 504 `{"message": "Endpoint request timed out"}`).
- `responseTransferMode: STREAM`
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode.html): the answer is relayed
  as the function writes it, for at most 15 minutes, and cut after 5 minutes without data (REGIONAL and PRIVATE
  endpoints; 30 s for EDGE).
- A throttled Lambda invocation (no container free, none may start: Lambda's 429) is not forwarded: API Gateway
  answers 500 `{"message": "Internal server error"}`
  (https://repost.aws/knowledge-center/api-gateway-internal-server-error, "Throttling occurs"), as its
  INTEGRATION_FAILURE gateway response, which falls back on DEFAULT_5XX; an API that customises either answers with
  its status, static headers and `application/json` body template instead
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/supported-gateway-response-types.html). That a Lambda
  throttle is an INTEGRATION_FAILURE is AWS's answer on its forum, not a documentation page (docs/deploy.md,
  "Throttles").
- Mock integrations (SAM's CORS preflights) answer with their configured status and headers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from stratus.emulator.apigateway_http import match_path
from stratus.emulator.containers import ClientGoneError, FunctionError, FunctionPool, ThrottledError
from stratus.emulator.events import (
    Answer,
    MalformedResponseError,
    Request,
    json_answer,
    read_v1_response,
    v1_event,
)
from stratus.emulator.proxy_integration import (
    REST_API_REMAPPED,
    FrontDoor,
    Invocation,
    api_gateway_pool,
    read_whole,
    send_answer,
    send_stream,
)
from stratus.emulator.stack import Stack
from stratus.emulator.stack_apis import BasePathMapping, RestApi, RestMethod
from stratus.types import Send

MISSING_TOKEN = {"message": "Missing Authentication Token"}
BAD_GATEWAY = {"message": "Internal server error"}
TIMED_OUT = {"message": "Endpoint request timed out"}
STREAM_MAX_SECONDS = 15 * 60
STREAM_IDLE_SECONDS = {"REGIONAL": 5 * 60, "PRIVATE": 5 * 60, "EDGE": 30}


def _specificity(method: RestMethod) -> tuple[int, int, int]:
    segments = method.path.split("/")
    return (
        int(any(segment.endswith("+}") for segment in segments)),
        sum(segment.startswith("{") for segment in segments),
        int(method.method == "ANY"),
    )


def select_method(methods: tuple[RestMethod, ...], verb: str, path: str) -> tuple[RestMethod, dict[str, str]] | None:
    candidates: list[tuple[RestMethod, dict[str, str]]] = []
    for method in methods:
        if method.method not in ("ANY", verb):
            continue
        variables = match_path(method.path, path)
        if variables is not None:
            candidates.append((method, variables))
    return min(candidates, key=lambda found: _specificity(found[0])) if candidates else None


class RestApiDoor(FrontDoor):
    kind = "REST API"

    def __init__(
        self,
        api: RestApi,
        stack: Stack,
        pools: Mapping[str, FunctionPool],
        time_scale: float = 1.0,
        mapping: BasePathMapping | None = None,
    ) -> None:
        super().__init__(mapping.domain if mapping else api.logical_id, pools, remapped=REST_API_REMAPPED)
        self.api = api
        self.stack = stack
        self.time_scale = time_scale
        """Multiplies the streaming limits (the method timeouts come scaled in `stack`)."""
        self.mapping = mapping
        """Served as a custom domain: one stage at a base path, no stage in the URL."""
        if mapping is not None:
            self.kind = "Custom domain"

    @property
    def base_path(self) -> str:
        """What every path this door routes begins with: the stage, or a custom domain's base path."""
        if self.mapping is None:
            return f"/{self.api.stage}"
        return f"/{self.mapping.base_path}" if self.mapping.base_path else ""

    def _stage_and_path(self, request_path: str) -> tuple[str, str] | None:
        """The stage a request reaches and its path below the stage (or the base path); None when it reaches none.
        On a custom domain the base path selects the stage (https://docs.aws.amazon.com/apigateway/latest/
        developerguide/rest-api-mappings.html)."""
        if self.mapping is None:
            stage, _, rest = request_path.lstrip("/").partition("/")
            return stage, f"/{rest}"
        base = self.base_path
        if base and request_path != base and not request_path.startswith(base + "/"):
            return None
        return self.mapping.stage, request_path[len(base) :] or "/"

    def _gateway_response(self, kind: str, default: Answer) -> Answer:
        """`default` as the API's gateway response of `kind` (or its DEFAULT_5XX / DEFAULT_4XX) changes it."""
        fallback = "DEFAULT_5XX" if default.status >= 500 else "DEFAULT_4XX"
        custom = self.api.gateway_responses.get(kind) or self.api.gateway_responses.get(fallback)
        if custom is None:
            return default
        body = custom.templates.get("application/json")
        return Answer(
            custom.status or default.status,
            [*default.headers, *custom.headers.items()],
            default.body if body is None else body.encode(),
        )

    def too_large(self) -> Answer:
        return json_answer(413, {"message": "Request Too Long"})

    async def handle(self, request: Request, send: Send) -> None:
        reached = self._stage_and_path(request.path)
        stage, path = reached or ("", "")
        selected = select_method(self.api.methods, request.method, path) if stage in self.api.stages else None
        if selected is None:
            await send_answer(
                send, json_answer(403, MISSING_TOKEN, ("x-amzn-ErrorType", "MissingAuthenticationTokenException"))
            )
            return
        method, variables = selected
        if method.integration == "mock":
            await send_answer(send, Answer(method.mock_status, list(method.mock_headers.items()), b""))
            return
        pool = api_gateway_pool(
            self.stack,
            self.pools,
            method.function or "",
            method.qualifier,
            api_id=self.api.api_id,
            stage=stage,
            method=request.method,
            path=path,
        )
        if pool is None:
            await send_answer(send, json_answer(500, BAD_GATEWAY))
            return
        event = v1_event(
            request,
            api_id=self.api.api_id,
            stage=stage,
            resource=method.path,
            path=path,
            path_parameters=variables,
            domain_path=request.path if self.mapping else None,
        )
        await self._invoke(send, pool, method, event, request.gone)

    async def _invoke(
        self,
        send: Send,
        pool: FunctionPool,
        method: RestMethod,
        event: dict[str, Any],
        gone: asyncio.Future[None] | None,
    ) -> None:
        timeout = method.timeout_ms / 1000
        try:
            async with pool.invocation(gone=gone) as container:
                invocation = Invocation(pool)
                try:
                    invoked = await asyncio.wait_for(invocation.run(container, event), timeout)
                except TimeoutError:
                    await container.stop()  # its answer would arrive after API Gateway stopped waiting
                    await send_answer(send, json_answer(504, TIMED_OUT))
                    return
                stream = invoked.stream
                if stream is not None and method.streaming:
                    idle = STREAM_IDLE_SECONDS.get(self.api.endpoint_type, 30) * self.time_scale
                    invocation.deadline = min(
                        invocation.deadline, asyncio.get_running_loop().time() + STREAM_MAX_SECONDS * self.time_scale
                    )
                    await send_stream(
                        send, invocation, container, stream, self.integration_headers(stream.headers), idle_seconds=idle
                    )
                    return
                answer = await read_whole(invocation, container, invoked, read_v1_response)
        except (FunctionError, MalformedResponseError):
            answer = json_answer(502, BAD_GATEWAY)
        except ThrottledError:
            answer = self._gateway_response("INTEGRATION_FAILURE", json_answer(500, BAD_GATEWAY))
        except ClientGoneError:
            return  # dropped while it waited: no one to answer
        answer.headers = self.integration_headers(answer.headers)
        await send_answer(send, answer)
