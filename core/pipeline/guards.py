"""Guards: the server's global authenticators establish the user, then per-item authorization (public, scopes,
roles, custom guards) lets the call through or refuses it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from stratus.errors import ForbiddenError, UnauthorizedError
from stratus.server.context import Context
from stratus.server.policy import Access, Authenticator


async def authenticate(context: Context, authenticators: Sequence[Authenticator]) -> Context:
    """Run every global guard in order; each may establish the user or raise to deny."""
    for authenticator in authenticators:
        principal = await authenticator(context)
        if principal is not None:
            context = dataclasses.replace(context, user=principal)
    return context


NO_AUTHENTICATION = (
    "this server authenticates no one: set STRATUS_AUTH_MODE (jwt or gateway), or give the McpServer an authenticator"
)


async def authorize(
    context: Context, access: Access, *, kind: str, challenge: str | None = None, authenticates: bool = True
) -> None:
    """Raise unless the request may use this item: public, else all scopes, at least one role, every guard.

    Raises:
        UnauthorizedError: the item is restricted and the request has no user.
        ForbiddenError: the user lacks a scope or role, or a guard said no; or the item is restricted and the server
            `authenticates` no one, so no credentials could ever help (the message names the setting to change).
    """
    if not access.restricted:
        return
    name = context.item or "?"
    user = context.user
    if user is None and not authenticates:
        raise ForbiddenError(f"{kind.capitalize()} '{name}' needs an authenticated user, but {NO_AUTHENTICATION}")
    if user is None:
        raise UnauthorizedError(f"Authentication required for {kind} '{name}'", challenge=challenge or "Bearer")
    missing = [scope for scope in access.scopes if scope not in user.scopes]
    if missing:
        scope = " ".join(access.scopes)
        raise ForbiddenError(
            f"Insufficient scope for {kind} '{name}': needs {scope}",
            challenge=f'Bearer error="insufficient_scope", scope="{scope}"',
        )
    if access.roles and not user.roles.intersection(access.roles):
        raise ForbiddenError(f"{kind.capitalize()} '{name}' needs one of the roles {', '.join(access.roles)}")
    for guard in access.guards:
        if not await guard(context):
            raise ForbiddenError(f"Access to {kind} '{name}' was denied")
