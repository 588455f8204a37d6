"""One HTTP exchange as `stratus check-deploy` makes it: redirects reported, never followed (a check must see where a
door sends a browser), every value of a repeated header kept (`Set-Cookie`), urllib only."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

TIMEOUT_SECONDS = 30.0

Answer = tuple[int, dict[str, list[str]], bytes]
"""The status, each header's values by lower-cased name, and the body."""


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def send(method: str, url: str, body: bytes | None = None, headers: Mapping[str, str] | None = None) -> Answer:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"not an http(s) URL: {url!r}")
    request = urllib.request.Request(url, data=body, headers=dict(headers or {}), method=method)  # noqa: S310
    try:
        with _OPENER.open(request, timeout=TIMEOUT_SECONDS) as response:
            return response.status, _headers(response.headers), response.read()
    except urllib.error.HTTPError as answered:
        return answered.code, _headers(answered.headers), answered.read()


def _headers(message: Any) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, value in message.items():
        found.setdefault(name.lower(), []).append(value)
    return found
