"""Trust the claims an API Gateway authorizer put in the request context, for deployments that authenticate there.

The buffered shape reads them from the Lambda event; the streaming shape (the Lambda Web Adapter) from the
`x-amzn-request-context` header the adapter writes, where `STRATUS_TRUST_REQUEST_CONTEXT_HEADER` says it is there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stratus.auth.bearer import principal_from_claims
from stratus.errors import UnauthorizedError
from stratus.request.aws_context import authorizer_claims, request_context
from stratus.server.principal import Principal


def _unflatten(value: Any) -> Any:
    # HTTP API JWT authorizers flatten array claims to strings such as "[a b]" or '["a","b"]'.
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        try:
            return json.loads(value)
        except ValueError:
            return value[1:-1]
    return value


class GatewayAuthenticator:
    """The principal API Gateway already authenticated; a request whose context carries none is refused."""

    def __init__(self, *, trust_request_context_header: bool = False) -> None:
        self._trust_header = trust_request_context_header

    async def authenticate(self, headers: Mapping[str, str], scope: Mapping[str, Any]) -> Principal:
        """Raises UnauthorizedError when the request context has no authorizer claims with a subject."""
        claims = authorizer_claims(request_context(scope, headers, trust_header=self._trust_header))
        if not claims or not claims.get("sub"):
            raise UnauthorizedError(
                "Authentication required: STRATUS_AUTH_MODE=gateway takes the caller from API Gateway's authorizer, "
                "and this request carries none (served outside API Gateway, or by a route without an authorizer)",
                challenge="Bearer",
                data={"setting": "STRATUS_AUTH_MODE"},
            )
        for name in ("scope", "scp", "roles", "cognito:groups"):
            if name in claims:
                claims[name] = _unflatten(claims[name])
        return principal_from_claims(claims)
