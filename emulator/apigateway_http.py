"""An API Gateway HTTP API in front of its Lambda proxy integrations.

- Routing (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-routes.html): a route is
  `METHOD /path` or `ANY /path`, paths may hold `{variable}`s and end in a greedy `{proxy+}`, `$default` catches
  what nothing else matches; the most specific match wins (literal paths over variables over greedy paths over
  `$default`, a method over ANY). A request no route matches gets API Gateway's own 404 `{"message":"Not Found"}`.
- CORS (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-cors.html): with a CORS
  configuration API Gateway answers preflights itself; without one an OPTIONS request is routed like any other.
- The integration (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html):
  payload format 2.0 (or 1.0) events, the proxy response read back, 30 s integration timeout and 10 MB payload
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html): past the timeout 503
  `{"message":"Service Unavailable"}`, over the payload 413 `{"message":"Request Entity Too Large"}`.
- A function error, a malformed answer, or no permission for API Gateway to invoke the function: 500
  `{"message":"Internal Server Error"}`
  (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html); a throttled
  invocation (Lambda's 429: no container free, none may start) too, as an integration failure
  (https://repost.aws/knowledge-center/api-gateway-internal-server-error, "Throttling occurs").
- Response headers pass through as the function wrote them; AWS documents no renaming here (only the REST API's:
  https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html). Renaming
  `WWW-Authenticate` to `x-amzn-Remapped-WWW-Authenticate` is reported for HTTP APIs, not documented: with
  `remap_www_authenticate` the door does it (`proxy_integration.REPORTED_REMAPPED`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import Any

from stratus.emulator.containers import ClientGoneError, FunctionError, FunctionPool, ThrottledError
from stratus.emulator.events import (
    Answer,
    MalformedResponseError,
    Request,
    json_answer,
    read_v1_response,
    read_v2_response,
    v1_event,
    v2_event,
)
from stratus.emulator.proxy_integration import (
    REPORTED_REMAPPED,
    FrontDoor,
    Invocation,
    api_gateway_pool,
    preflight,
    read_whole,
    send_answer,
)
from stratus.emulator.stack import Stack
from stratus.emulator.stack_apis import HttpApi, Route
from stratus.types import Send

NOT_FOUND = {"message": "Not Found"}
INTERNAL_ERROR = {"message": "Internal Server Error"}
UNAVAILABLE = {"message": "Service Unavailable"}


def match_path(template: str, path: str) -> dict[str, str] | None:
    """The path variables when `path` matches the route path `template`, else None."""
    wanted = template.strip("/").split("/") if template != "/" else [""]
    given = path.strip("/").split("/") if path != "/" else [""]
    if path != "/" and path.endswith("/") != template.endswith("/"):
        return None
    found: dict[str, str] = {}
    for index, segment in enumerate(wanted):
        if segment.startswith("{") and segment.endswith("+}"):
            rest = given[index:]
            if not rest or rest == [""]:
                return None
            found[segment[1:-2]] = "/".join(rest)
            return found
        if index >= len(given):
            return None
        if segment.startswith("{") and segment.endswith("}"):
            if not given[index]:
                return None
            found[segment[1:-1]] = given[index]
        elif segment != given[index]:
            return None
    return found if len(given) == len(wanted) else None


def _specificity(route: Route) -> tuple[int, int, int, int]:
    segments = route.path.split("/")
    greedy = int(any(segment.endswith("+}") for segment in segments))
    variables = sum(segment.startswith("{") for segment in segments)
    return (int(route.path == "$default"), greedy, variables, int(route.method == "ANY"))


def select_route(routes: tuple[Route, ...], method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The most specific route for the request, with its path variables."""
    candidates: list[tuple[Route, dict[str, str]]] = []
    for route in routes:
        if route.method not in ("ANY", method):
            continue
        variables = {} if route.path == "$default" else match_path(route.path, path)
        if variables is not None:
            candidates.append((route, variables))
    return min(candidates, key=lambda found: _specificity(found[0])) if candidates else None


class HttpApiDoor(FrontDoor):
    kind = "HTTP API"

    def __init__(
        self, api: HttpApi, stack: Stack, pools: Mapping[str, FunctionPool], *, remap_www_authenticate: bool = False
    ) -> None:
        super().__init__(api.logical_id, pools, remapped=REPORTED_REMAPPED if remap_www_authenticate else ())
        self.api = api
        self.stack = stack
        self._running: set[asyncio.Future[Answer]] = set()

    def too_large(self) -> Answer:
        return json_answer(413, {"message": "Request Entity Too Large"})

    async def handle(self, request: Request, send: Send) -> None:
        request_id = str(uuid.uuid4())
        answer = preflight(self.api.cors, request)
        if answer is None:
            answer = await self._answer(request)
        answer.headers.append(("apigw-requestid", request_id))
        await send_answer(send, answer)

    async def _answer(self, request: Request) -> Answer:
        selected = select_route(self.api.routes, request.method, request.path)
        if selected is None:
            return json_answer(404, NOT_FOUND)
        route, variables = selected
        pool = api_gateway_pool(
            self.stack,
            self.pools,
            route.function,
            route.qualifier,
            api_id=self.api.api_id,
            stage=self.api.stage,
            method=request.method,
            path=request.path,
        )
        if pool is None:
            return json_answer(500, INTERNAL_ERROR)
        route_key = "$default" if route.path == "$default" else f"{route.method} {route.path}"
        if route.payload_version == "1.0":
            event = v1_event(
                request,
                api_id=self.api.api_id,
                stage=self.api.stage,
                resource=route.path,
                path=request.path,
                path_parameters=variables,
            )
        else:
            event = v2_event(
                request, api_id=self.api.api_id, route_key=route_key, stage=self.api.stage, path_parameters=variables
            )
        invoking = asyncio.ensure_future(self._invoke(pool, event, route.payload_version, request.gone))
        try:
            return await asyncio.wait_for(asyncio.shield(invoking), route.timeout_ms / 1000)
        except TimeoutError:
            # API Gateway gives up; the function runs on to its own end, holding its container.
            self._running.add(invoking)
            invoking.add_done_callback(self._running.discard)
            return json_answer(503, UNAVAILABLE)

    async def _invoke(
        self, pool: FunctionPool, event: dict[str, Any], payload_version: str, gone: asyncio.Future[None] | None
    ) -> Answer:
        try:
            async with pool.invocation(gone=gone) as container:
                invocation = Invocation(pool)
                invoked = await invocation.run(container, event)
                read = read_v1_response if payload_version == "1.0" else read_v2_response
                answer = await read_whole(invocation, container, invoked, read)
        except (FunctionError, MalformedResponseError, ThrottledError):
            return json_answer(500, INTERNAL_ERROR)
        except ClientGoneError:
            return json_answer(500, INTERNAL_ERROR)  # dropped while it waited; no one reads this
        answer.headers = self.integration_headers(answer.headers)
        return answer
