"""The HTTP request a call arrived in, as the transport hands it down."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from stratus.request.signal import CancellationSignal

if TYPE_CHECKING:
    from stratus.request.outbound import Outbound


class HttpRequest(NamedTuple):
    """The HTTP request a call arrived in. Handlers may read headers; never log them (they carry credentials)."""

    method: str
    path: str
    headers: Mapping[str, str]
    lambda_context: Any = None
    disconnected: CancellationSignal | None = None
    """Cancelled when the client goes away before the answer is sent (not observable behind Mangum)."""
    outbound: Outbound | None = None
    """The call's response stream, when the response can stream (SSE); None for a single JSON answer."""
