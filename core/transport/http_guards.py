"""Checks made on every request before its body is read: Host and Origin (DNS rebinding), Accept, Content-Type.

Defaults that work behind API Gateway without configuration: the Host the request arrived on is allowed when it
is the API's own domain (from the Lambda event's `requestContext.domainName`), localhost is always allowed, and an
Origin is allowed when it is the request's own origin or a localhost one. Anything else is opt-in through
`STRATUS_ALLOWED_HOSTS` / `STRATUS_ALLOWED_ORIGINS` (`*` allows all).

The API's domain is only ever taken from something the client cannot write: the Lambda event (Mangum), or the
`x-amzn-request-context` header where `STRATUS_TRUST_REQUEST_CONTEXT_HEADER` declares the Web Adapter in front.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from stratus.errors import HttpError
from stratus.request.aws_context import request_domain
from stratus.transport.asgi import Headers
from stratus.types import Scope

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
HOSTS_SETTING = "STRATUS_ALLOWED_HOSTS"
ORIGINS_SETTING = "STRATUS_ALLOWED_ORIGINS"


def _split_host(value: str) -> str:
    """The host part of a Host header value, lower-cased, port removed, IPv6 brackets kept."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HostOriginGuard:
    """Refuses requests whose Host (421) or Origin (403) this deployment does not serve."""

    def __init__(
        self,
        allowed_hosts: tuple[str, ...],
        allowed_origins: tuple[str, ...],
        *,
        trust_request_context_header: bool = False,
    ) -> None:
        self.trust_request_context_header = trust_request_context_header
        self._any_host = "*" in allowed_hosts
        self._hosts = frozenset(value.lower() for value in allowed_hosts) | frozenset(
            _split_host(value) for value in allowed_hosts
        )
        self._any_origin = "*" in allowed_origins
        self._origins = frozenset(value.lower().rstrip("/") for value in allowed_origins)

    def check(self, scope: Scope, headers: Headers) -> None:
        """Raise HttpError unless the request's Host and Origin are allowed."""
        raw_host = headers.get("host")
        if raw_host is None:  # only browsers can be rebound, and they always send Host
            raw_host = request_domain(scope, headers, trust_header=self.trust_request_context_header) or ""
        host = _split_host(raw_host)
        if raw_host and not self._host_allowed(raw_host, host, scope, headers):
            raise HttpError(
                421,
                f"Misdirected request: this server does not serve that Host; to serve it, add it to {HOSTS_SETTING}",
                data={"setting": HOSTS_SETTING},
            )
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, raw_host):
            raise HttpError(
                403,
                f"Forbidden: Origin not allowed; to allow it, add it to {ORIGINS_SETTING}",
                data={"setting": ORIGINS_SETTING},
            )

    def _host_allowed(self, raw_host: str, host: str, scope: Scope, headers: Headers) -> bool:
        if self._any_host or host in LOCAL_HOSTS:
            return True
        if raw_host.lower() in self._hosts or host in self._hosts:
            return True
        return host == request_domain(scope, headers, trust_header=self.trust_request_context_header)

    def _origin_allowed(self, origin: str, raw_host: str) -> bool:
        normalized = origin.strip().lower().rstrip("/")
        if self._any_origin or normalized in self._origins:
            return True
        parts = urlsplit(normalized)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        if _split_host(parts.netloc) in LOCAL_HOSTS:
            return True
        return parts.netloc == raw_host.strip().lower()


def _media_types(value: str) -> list[str]:
    return [part.split(";", 1)[0].strip().lower() for part in value.split(",") if part.strip()]


_JSON_RANGES = frozenset({"application/json", "application/*", "*/*"})
_ACCEPT_READINGS: dict[str, tuple[bool, bool]] = {}
"""Accept values already read: whether each accepts JSON, and whether it lists `text/event-stream` (a client sends
the same one on every call, so each is read once; a bounded memo)."""
_ACCEPT_READINGS_MAX = 64


def _read_accept(accept: str) -> tuple[bool, bool]:
    reading = _ACCEPT_READINGS.get(accept)
    if reading is None:
        media_types = _media_types(accept)
        reading = (not _JSON_RANGES.isdisjoint(media_types), "text/event-stream" in media_types)
        if len(_ACCEPT_READINGS) < _ACCEPT_READINGS_MAX:
            _ACCEPT_READINGS[accept] = reading
    return reading


def check_accepts_json(headers: Headers) -> None:
    """406 unless the client accepts a JSON response (a missing Accept accepts anything)."""
    accept = headers.get("accept")
    if accept is not None and not _read_accept(accept)[0]:
        raise HttpError(406, "Not Acceptable: the client must accept application/json")


def accepts_event_stream(accept: str | None) -> bool:
    """Whether the client listed `text/event-stream` in Accept."""
    return accept is not None and _read_accept(accept)[1]


def check_json_body(headers: Headers) -> None:
    """415 unless the body is declared as UTF-8 JSON."""
    content_type = headers.get("content-type", "")
    media, _, parameters = content_type.partition(";")
    if media.strip().lower() != "application/json":
        raise HttpError(415, "Unsupported Media Type: the body must be application/json")
    for parameter in parameters.split(";"):
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            raise HttpError(415, "Unsupported Media Type: JSON bodies must be UTF-8")
