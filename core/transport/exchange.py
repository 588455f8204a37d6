"""One HTTP request to the endpoint and the way its answer goes back, with what is decided about it once: its mode
(buffered or live, from the front door's `asgi.BUFFERED` extension) and who sent it."""

import asyncio
from typing import Any

from stratus.errors import HttpError, McpError
from stratus.net.request_body import BodyTooLargeError, read_body
from stratus.protocol.jsonrpc import decode, request_id_of
from stratus.request.aws_context import authorizer_claims, request_context, source_ip
from stratus.request.http import HttpRequest
from stratus.request.outbound import Outbound
from stratus.request.signal import CancellationSignal
from stratus.server.principal import Principal
from stratus.transport.asgi import Headers, is_buffered, route_path
from stratus.transport.http_guards import check_json_body
from stratus.types import Receive, Scope, Send


def peer_address(scope: Scope) -> str | None:
    """The address of the connection's other end (uvicorn's `client`), when there is no request context."""
    client = scope.get("client")
    return str(client[0]) if client else None


class BodyLimits:
    """How much of a body the endpoint reads, and for how long on a live connection."""

    __slots__ = ("max_bytes", "timeout_seconds")

    def __init__(self, max_bytes: int, timeout_seconds: float = 30.0) -> None:
        self.max_bytes = max_bytes
        self.timeout_seconds = timeout_seconds


class Exchange:
    """One request to the endpoint: its ASGI scope and channels, its headers, its mode and (once authenticated) its
    principal."""

    __slots__ = (
        "buffered",
        "consumed",
        "headers",
        "limits",
        "method",
        "path",
        "principal",
        "receive",
        "scope",
        "send",
        "trust_context",
    )

    def __init__(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        headers: Headers,
        limits: BodyLimits,
        trust_context: bool = False,
    ) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send
        self.headers = headers
        self.limits = limits
        self.trust_context = trust_context
        self.buffered = is_buffered(scope)
        """Sent whole once it ends, with no client-gone signal (a Lambda front door); otherwise live."""
        self.method: str = scope["method"]
        self.path = route_path(scope).rstrip("/")
        self.principal: Principal | None = None
        self.consumed = False
        """Whether the body was read (it can be read once)."""

    def http_request(
        self, *, disconnected: CancellationSignal | None = None, outbound: Outbound | None = None
    ) -> HttpRequest:
        """What a handler may read of the request: headers, the Lambda event and context, the authorizer's claims."""
        scope = self.scope
        event = scope.get("aws.event")
        context = request_context(scope, self.headers, trust_header=self.trust_context)
        return HttpRequest(
            scope["method"],
            scope.get("path", ""),
            self.headers,
            lambda_context=scope.get("aws.context"),
            disconnected=disconnected,
            outbound=outbound,
            lambda_event=event if isinstance(event, dict) else None,
            authorizer_claims=authorizer_claims(context),
            source_address=source_ip(context) or peer_address(scope),
        )

    async def json_body(self) -> Any:
        """A JSON body, {} when there is none (the session REST API's bodies)."""
        raw = await self.body()
        if not raw:  # whitespace alone is no JSON text: a 400, like any other body that does not parse
            return {}
        check_json_body(self.headers)
        return decode(raw)

    async def body(self) -> bytes:
        """The request body, at most `limits.max_bytes`. On a live connection (uvicorn) one deadline covers the
        whole body, so a client trickling a byte at a time cannot hold it; a Lambda event carries the whole body
        already and needs none."""
        declared = self.headers.get("content-length")
        limit = self.limits.max_bytes
        # `isdigit` alone takes `²`, which int() refuses; a length of 19 digits or more is past any body limit.
        if declared and declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
            raise too_large(limit)
        timeout = self.limits.timeout_seconds
        self.consumed = True
        try:
            if self.buffered:
                return await read_body(self.receive, limit)
            async with asyncio.timeout(timeout):
                return await read_body(self.receive, limit)
        except BodyTooLargeError:
            raise too_large(limit) from None
        except TimeoutError:
            raise HttpError(
                408,
                f"Request Timeout: the body did not arrive within {timeout:g} s (STRATUS_BODY_TIMEOUT_SECONDS)",
                headers={"connection": "close"},
            ) from None


async def unread_request_id(exchange: Exchange) -> Any:
    """The JSON-RPC id of a POST refused before its body was read (an authenticator's 401, a wrong Content-Type), so
    that its error echoes it as JSON-RPC asks; None when there is no readable one."""
    if exchange.consumed or exchange.method != "POST":
        return None
    try:
        return request_id_of(decode(await exchange.body()))
    except (HttpError, McpError, ValueError):
        return None


def too_large(limit: int) -> HttpError:
    return HttpError(413, f"Payload Too Large: the body limit is {limit} bytes (STRATUS_MAX_BODY_BYTES)")
