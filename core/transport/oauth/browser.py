"""The browser a sign-in belongs to: a random, HTTP-only cookie, whose digest every sign-in record carries. The
consent form and the upstream callback are honoured only from the browser that started the sign-in, so a link that
ends someone else's sign-in in a victim's browser (login CSRF) or a forged consent post leads nowhere."""

from __future__ import annotations

import secrets

from stratus.auth.front_config import CONSENT_SECONDS
from stratus.transport.oauth.records import digest
from stratus.types import Scope

COOKIE = "stratus-browser"
SECURE_COOKIE = "__Host-stratus-browser"
"""On https: RFC 6265bis's `__Host-` prefix keeps a sibling subdomain from planting the cookie."""


def cookie_name(secure: bool) -> str:
    return SECURE_COOKIE if secure else COOKIE


def browser_id(scope: Scope, secure: bool) -> str | None:
    """The browser's id from its cookie, if it sent one."""
    wanted = cookie_name(secure)
    for name, value in scope.get("headers") or ():
        if name.lower() != b"cookie":
            continue
        for pair in value.decode("latin-1").split(";"):
            key, _, found = pair.strip().partition("=")
            if key == wanted and 20 <= len(found) <= 100:
                return str(found)
    return None


def binding(scope: Scope, secure: bool) -> tuple[str, tuple[str, ...]]:
    """The digest that binds a record to this browser, and the cookie to set when the browser had none."""
    found = browser_id(scope, secure)
    if found is not None:
        return digest(found), ()
    made = secrets.token_urlsafe(32)
    attributes = f"Path=/; Max-Age={CONSENT_SECONDS}; HttpOnly; SameSite=Lax" + ("; Secure" if secure else "")
    return digest(made), (f"{cookie_name(secure)}={made}; {attributes}",)


def is_same_browser(scope: Scope, secure: bool, bound: str) -> bool:
    found = browser_id(scope, secure)
    return found is not None and secrets.compare_digest(digest(found), bound)
