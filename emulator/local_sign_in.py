"""`stratus local --sign-in`: the authorization front (`AuthMode=front`) served with a local OpenID provider as its
upstream (`stratus.emulator.sign_in_provider`), so that a host signs in with nothing deployed and nothing to set.

It sets what docs/deploy.md ("Sign-in locally") has a user set by hand for a provider of their own: the template's
`AuthMode=front`, `AuthUpstreamIssuer` and `AuthUpstreamClientId` (the provider's), `AuthAudience` (the HTTP API's
MCP URL, unless given), and the upstream client's secret for every function (`STRATUS_AUTH_UPSTREAM_CLIENT_SECRET`,
which the template reads from SSM). The provider allows one redirect URI, the front's callback at the HTTP API
(`OAuthFrontDoor=http-api`, the default), on the first front door's port, which must therefore be fixed.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from stratus.emulator.sign_in_provider import install, running

FRONT_DOOR = "http-api"
MCP_PATH = "/mcp"


class SignInRefusedError(ValueError):
    """The flags ask for something `--sign-in` cannot serve; the message names the flag."""


@dataclass(frozen=True)
class LocalSignIn:
    parameters: dict[str, str]
    """The template's parameters, the user's own with the sign-in's."""
    environment: dict[str, str]
    """For every function, on top of the template's."""
    banner: str
    """What to tell the user once the stack serves."""


def _refusal(port: int, given: Mapping[str, str]) -> str | None:
    if port == 0:
        return "--sign-in needs a fixed --port: the provider allows the front's callback URL, which names it"
    if given.get("OAuthFrontDoor", FRONT_DOOR) != FRONT_DOOR:
        return f"--sign-in serves the front at the HTTP API: leave out --parameter OAuthFrontDoor (or set {FRONT_DOOR})"
    if given.get("AuthMode", "front") != "front":
        return "--sign-in serves the authorization front: leave out --parameter AuthMode (or set front)"
    for name in ("AuthUpstreamIssuer", "AuthUpstreamClientId"):
        if name in given:
            return f"--sign-in sets {name} to its own provider's: leave out --parameter {name}, or --sign-in"
    return None


@contextmanager
def local_sign_in(host: str, port: int, given: Mapping[str, str], log: IO[bytes]) -> Iterator[LocalSignIn]:
    """The provider running (installed on first use) for the front at `host:port`, until the block ends.

    Raises:
        SignInRefusedError: the flags conflict with it.
        ProviderUnavailableError: the provider could not be installed or started.
    """
    refusal = _refusal(port, given)
    if refusal is not None:
        raise SignInRefusedError(refusal)
    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}"  # noqa: S104 - a bind address
    installed = install(sys.stderr)
    with running(installed, redirect_uris=[f"{base}/oauth/callback"], log=log) as provider:
        parameters = {
            "AuthMode": "front",
            "AuthAudience": f"{base}{MCP_PATH}",
            **given,
            "AuthUpstreamIssuer": provider.issuer,
            "AuthUpstreamClientId": provider.client_id,
        }
        banner = (
            f"Sign-in: a local OpenID provider at {provider.issuer} (any username signs in, no password); a host "
            f"connecting to {parameters['AuthAudience']} signs in through the front"
        )
        yield LocalSignIn(parameters, {"STRATUS_AUTH_UPSTREAM_CLIENT_SECRET": provider.client_secret}, banner)
