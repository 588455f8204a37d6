"""Trust the claims an API Gateway authorizer put in the Lambda event, for deployments that authenticate there."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stratus.auth.bearer import principal_from_claims
from stratus.errors import UnauthorizedError
from stratus.server.principal import Principal


def authorizer_claims(event: Any) -> dict[str, Any] | None:
    """Claims from `requestContext.authorizer`: HTTP API JWT authorizers (`jwt.claims`), REST Cognito authorizers
    (`claims`) and Lambda authorizers (`lambda`, or the context keys themselves)."""
    if not isinstance(event, Mapping):
        return None
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    if not isinstance(authorizer, Mapping):
        return None
    jwt = authorizer.get("jwt")
    for nested in (
        jwt.get("claims") if isinstance(jwt, Mapping) else None,
        authorizer.get("claims"),
        authorizer.get("lambda"),
    ):
        if isinstance(nested, Mapping):
            return dict(nested)
    flat = {key: value for key, value in authorizer.items() if key not in ("integrationLatency", "principalId")}
    if "principalId" in authorizer and "sub" not in flat:
        flat["sub"] = authorizer["principalId"]
    return flat or None


def _unflatten(value: Any) -> Any:
    # HTTP API JWT authorizers flatten array claims to strings such as "[a b]" or '["a","b"]'.
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        try:
            return json.loads(value)
        except ValueError:
            return value[1:-1]
    return value


class GatewayAuthenticator:
    """The principal API Gateway already authenticated; a request whose event carries none is refused."""

    async def authenticate(self, headers: Mapping[str, str], scope: Mapping[str, Any]) -> Principal:
        """Raises UnauthorizedError when the event has no authorizer claims with a subject."""
        claims = authorizer_claims(scope.get("aws.event"))
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
