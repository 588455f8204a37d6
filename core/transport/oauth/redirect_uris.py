"""What a client may register as a redirect URI, and where a browser sent to one goes.

A redirect URI is checked as a browser will read it (the WHATWG URL standard), not only as RFC 3986 does, since the
two disagree on text that a browser repairs: a backslash is a path separator in an http(s) URL
(`http://evil.example\\@127.0.0.1/cb` goes to evil.example), tabs and newlines are dropped, `http:host` means
`http://host`, and a host may be percent-encoded. So a redirect URI must be plain RFC 3986 text (printable ASCII
of its allowed characters: no space, backslash, control character or other script), carry no user information
(`https://legit.example@evil.example/cb` names evil.example), and be https, http on a loopback host (RFC 8252
section 7.3: a native app's local listener), or a private-use scheme (RFC 8252 section 7.1), never one that runs
something in the browser or the operating system (`javascript:`, `ms-msdt:`, `jar:`, `view-source:`...), and never
with a fragment (RFC 6749 section 3.1.2). What passes is compared exactly, as registered (OAuth 2.1 section 4.1.1).
"""

from __future__ import annotations

import string
from typing import Any
from urllib.parse import urlsplit

MAX_URI_LENGTH = 2000
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
REFUSED_SCHEMES = frozenset(
    {
        "javascript", "vbscript", "livescript", "data", "blob", "file", "filesystem", "about", "ftp", "ws", "wss",
        "jar", "view-source", "mhtml", "intent", "shell", "res", "search", "chrome", "resource",
    }
)  # fmt: skip
"""Schemes a browser or the operating system runs rather than hands to an application; `ms-*` (Windows' protocol
handlers: ms-msdt, ms-officecmd, search-ms...) too."""
URI_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~:/?#[]@!$&'()*+,;=%")
"""RFC 3986's unreserved and reserved characters, and the percent sign."""
SCHEME_CHARACTERS = frozenset(string.ascii_lowercase + string.digits + "+-.")


def redirect_uri_problem(uri: Any) -> str | None:
    """Why `uri` cannot be a redirect URI, or None when it can."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_LENGTH:
        return f"a redirect URI must be a string of 1 to {MAX_URI_LENGTH} characters"
    if "\\" in uri:
        return f"{uri!r} has a backslash, which a browser reads as a slash"
    if not set(uri) <= URI_CHARACTERS:
        return f"{uri!r} has a character a URI cannot hold (a space, a control character or non-ASCII text)"
    scheme, colon, rest = uri.partition(":")
    scheme = scheme.lower()
    if not colon or not scheme or not scheme[0].isalpha() or not set(scheme) <= SCHEME_CHARACTERS:
        return f"{uri!r} is not an absolute URI"
    if "#" in uri:
        return f"{uri!r} has a fragment, which a redirect URI must not"
    if scheme in REFUSED_SCHEMES or scheme.startswith("ms-") or scheme.endswith("-ms"):
        return f"{uri!r}: the {scheme} scheme is not allowed"
    try:
        parts = urlsplit(uri)
        host, _ = parts.hostname, parts.port
    except ValueError:
        return f"{uri!r} is not a URI"
    if "@" in parts.netloc:
        return f"{uri!r} has user information before its host, which would hide where it leads"
    if scheme in ("http", "https"):
        if not rest.startswith("//") or not host:
            return f"{uri!r} has no host"
        if "%" in parts.netloc:
            return f"{uri!r} has a percent-encoded host"
        if scheme == "http" and host not in LOOPBACK_HOSTS:
            return f"{uri!r}: http is allowed only for a loopback host (localhost, 127.0.0.1, [::1]); use https"
    return None


def destination(uri: str) -> str:
    """Where a browser sent to `uri` goes, as the consent page names it: the host (and port) of an http(s) URI, the
    scheme of any other (the application that claims it)."""
    if uri.partition(":")[0].lower() in ("http", "https"):
        uri = uri.replace("\\", "/")  # as a browser reads a special scheme's URL
    try:
        parts = urlsplit(uri)
        host, port = parts.hostname, parts.port
    except ValueError:
        return uri
    if parts.scheme.lower() not in ("http", "https") or not host:
        return f"{parts.scheme}:"
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port is not None else shown
