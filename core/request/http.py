"""The HTTP request a call arrived in, as the transport hands it down."""

from collections.abc import Mapping
from typing import Any, NamedTuple

from stratus.request.outbound import Outbound
from stratus.request.signal import CancellationSignal


class HttpRequest(NamedTuple):
    """The HTTP request a call arrived in. Handlers may read headers, the Lambda event and the authorizer's
    claims; never log them (they carry credentials). Its `repr` names none of them."""

    method: str
    path: str
    headers: Mapping[str, str]
    """By lower-case name; a repeated header's values joined with ", "."""
    lambda_context: Any = None
    """The Lambda context object of the invocation (buffered shape), or None."""
    disconnected: CancellationSignal | None = None
    """Cancelled when the client goes away before the answer is sent (not observable behind Mangum)."""
    outbound: Outbound | None = None
    """The call's response stream, when the response can stream (SSE); None for a single JSON answer."""
    lambda_event: Mapping[str, Any] | None = None
    """The raw Lambda event that invoked the function (buffered shape); None under uvicorn, where the Lambda Web
    Adapter passes only the event's `requestContext` (as the `x-amzn-request-context` header)."""
    authorizer_claims: Mapping[str, Any] | None = None
    """What an API Gateway authorizer put in `requestContext.authorizer` (JWT claims, a Cognito authorizer's
    claims, a Lambda authorizer's context), or None when no authorizer ran."""
    source_address: str | None = None
    """The caller's address: the trusted request context's `sourceIp` (`stratus.request.aws_context.source_ip`),
    else the connection's peer; never a header the client writes. None when neither is known."""

    def __repr__(self) -> str:
        return f"HttpRequest(method={self.method!r}, path={self.path!r})"
