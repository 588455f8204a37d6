"""The clients the front knows, and how each comes to be known: registered at the registration endpoint (RFC 7591:
any host may register, at most `STRATUS_AUTH_REGISTRATIONS_PER_HOUR` from one source address, a token bucket in the
store shared by every container) and kept in the store for a time to live, or named by a client ID metadata
document's URL; how their metadata is checked.

Redirect URIs are checked as a browser will read them and then compared exactly (redirect_uris.py).

Client ID metadata documents (the MCP 2025-11-25 authorization spec's preferred registration): a client whose ID is
an https URL is described by the JSON document at that URL, whose `client_id` must be that URL. The URL comes from
whoever starts a sign-in, so it is fetched as the gateway fetches its upstreams: every address its host resolves to
is checked and the connection goes to a checked address (core/net/addresses.py: no loopback, private, link-local or
metadata-service address unless STRATUS_GATEWAY_ALLOWED_NETWORKS allows it), with a time limit and a size limit. A
document is kept in the store for its `Cache-Control: max-age`, between one minute and one day (five minutes when it
names none).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from stratus.net.addresses import AddressGuard, UpstreamAddressError
from stratus.net.http11 import Http11Pool, HttpProtocolError, HttpRequestError
from stratus.resilience.limiter import RateLimit
from stratus.stores.base import RateLimitStore
from stratus.transport.asgi import request_headers
from stratus.transport.oauth.records import FrontRecords, digest
from stratus.transport.oauth.redirect_uris import redirect_uri_problem
from stratus.transport.oauth.replies import (
    OAuthError,
    read_limited,
    send_error,
    send_json,
    send_preflight,
    source_address,
)
from stratus.transport.oauth.source_caps import SourceCap
from stratus.types import Receive, Scope, Send

AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
GRANT_TYPES = ("authorization_code", "refresh_token")
MAX_REDIRECT_URIS = 10
MAX_NAME_LENGTH = 200
FETCH_SECONDS = 5.0
MAX_DOCUMENT_BYTES = 5 * 1024
"""The draft's suggested bound: a client's metadata is a few hundred bytes."""
DEFAULT_CACHE_SECONDS = 300
MIN_CACHE_SECONDS = 60
MAX_CACHE_SECONDS = 86400
_MAX_AGE = re.compile(r"max-age=(\d+)")

DocumentFetch = Callable[[str, Scope], Awaitable["Client"]]


@dataclass(frozen=True, slots=True)
class Client:
    client_id: str
    redirect_uris: tuple[str, ...]
    name: str
    auth_method: str
    grant_types: tuple[str, ...]
    secret_hash: str | None = None
    from_document: bool = False
    """Named by a client ID metadata document (its URL is the client ID) rather than registered here."""

    def record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Client:
        return cls(
            client_id=record["client_id"],
            redirect_uris=tuple(record["redirect_uris"]),
            name=record["name"],
            auth_method=record["auth_method"],
            grant_types=tuple(record["grant_types"]),
            secret_hash=record.get("secret_hash"),
            from_document=bool(record.get("from_document")),
        )

    def secret_matches(self, secret: str) -> bool:
        return self.secret_hash is not None and hmac.compare_digest(self.secret_hash, digest(secret))


def client_metadata(document: Any, *, client_id: str, from_document: bool) -> tuple[Client, bool]:
    """A client from registration metadata (RFC 7591 section 2) or a metadata document, and whether it needs a
    secret; raises OAuthError with `invalid_redirect_uri` or `invalid_client_metadata`."""
    if not isinstance(document, dict):
        raise OAuthError("invalid_client_metadata", "the client metadata must be a JSON object")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        raise OAuthError("invalid_redirect_uri", f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} URIs")
    for uri in uris:
        problem = redirect_uri_problem(uri)
        if problem:
            raise OAuthError("invalid_redirect_uri", problem)
    default_method = "none" if from_document else "client_secret_basic"  # RFC 7591 section 2's default
    method = document.get("token_endpoint_auth_method", default_method)
    allowed = ("none",) if from_document else AUTH_METHODS
    if method not in allowed:
        raise OAuthError("invalid_client_metadata", f"token_endpoint_auth_method must be one of {', '.join(allowed)}")
    grant_types = document.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or not grant_types or not set(grant_types) <= set(GRANT_TYPES):
        raise OAuthError("invalid_client_metadata", f"grant_types may hold only {', '.join(GRANT_TYPES)}")
    if document.get("response_types", ["code"]) != ["code"]:
        raise OAuthError("invalid_client_metadata", "response_types may hold only code")
    name = document.get("client_name", "")
    if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH:
        raise OAuthError("invalid_client_metadata", f"client_name must be a string of at most {MAX_NAME_LENGTH}")
    client = Client(client_id, tuple(uris), name, method, tuple(dict.fromkeys(grant_types)), None, from_document)
    return client, method != "none"


class ClientRegistry:
    """Registers clients and finds them by ID."""

    def __init__(self, records: FrontRecords, ttl_seconds: int, documents: DocumentFetch | None = None) -> None:
        self._records = records
        self._ttl = ttl_seconds
        self._documents = documents

    async def register(self, metadata: Any) -> tuple[Client, dict[str, Any]]:
        """A new client from its metadata, and the registration response (RFC 7591 section 3.2.1)."""
        client_id = secrets.token_urlsafe(24)
        client, confidential = client_metadata(metadata, client_id=client_id, from_document=False)
        issued = int(time.time())
        answer: dict[str, Any] = {
            "client_id": client_id,
            "client_id_issued_at": issued,
            "redirect_uris": list(client.redirect_uris),
            "grant_types": list(client.grant_types),
            "response_types": ["code"],
            "token_endpoint_auth_method": client.auth_method,
        }
        if client.name:
            answer["client_name"] = client.name
        if confidential:
            secret = secrets.token_urlsafe(32)
            client = Client(**{**client.record(), "secret_hash": digest(secret)})
            answer.update(client_secret=secret, client_secret_expires_at=issued + self._ttl)
        await self._records.put("client", client_id, client.record(), self._ttl)
        return client, answer

    async def find(self, client_id: str, scope: Scope) -> Client | None:
        """The client with this ID: registered here, or (an https URL) described by its metadata document (fetched,
        when not kept, on the request `scope`'s account).

        Raises:
            OAuthError: a metadata document that cannot be fetched or is not valid (`invalid_client`).
        """
        if client_id.startswith("https://") and self._documents is not None:
            return await self._documents(client_id, scope)
        record = await self._records.get("client", client_id)
        return None if record is None else Client.from_record(record)


class Registration:
    """POST /register."""

    def __init__(
        self, clients: ClientRegistry, limits: RateLimitStore, per_hour: int, *, trust_context_header: bool
    ) -> None:
        self._clients = clients
        self._limits = limits
        self._limit = RateLimit(per_hour / 3600.0, float(per_hour))
        self._trust_header = trust_context_header

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "OPTIONS":
            await send_preflight(send)
            return
        try:
            await send_json(send, 201, await self._register(scope, receive))
        except OAuthError as error:
            await send_error(send, error)

    async def _register(self, scope: Scope, receive: Receive) -> dict[str, object]:
        if scope["method"] != "POST":
            raise OAuthError("invalid_request", "register with POST", 405, {"allow": "POST"})
        content_type = request_headers(scope).get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise OAuthError("invalid_client_metadata", "the client metadata must be sent as application/json")
        body = await read_limited(receive)
        try:
            metadata = json.loads(body)
        except (UnicodeDecodeError, ValueError):
            raise OAuthError("invalid_client_metadata", "the body is not JSON") from None
        decision = await self._limits.acquire(
            f"oauth-register:{source_address(scope, trust_header=self._trust_header)}", self._limit
        )
        if not decision.allowed:
            retry = max(1, round(decision.retry_after))
            raise OAuthError(
                "temporarily_unavailable",
                "too many clients registered from this address; try again later "
                "(STRATUS_AUTH_REGISTRATIONS_PER_HOUR sets how many an address may register)",
                429,
                {"retry-after": str(retry)},
            )
        _, answer = await self._clients.register(metadata)
        return answer


def url_problem(client_id: str) -> str | None:
    """Why `client_id` cannot name a metadata document (the draft's section 3), or None."""
    try:
        parts = urlsplit(client_id)
    except ValueError:
        return "not a URL"
    if parts.scheme != "https" or not parts.hostname:
        return "not an https URL"
    if parts.path in ("", "/") or parts.fragment or parts.username or parts.password:
        return "it must have a path and no fragment or credentials"
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        return "its path has a dot segment"
    return None


class ClientDocuments:
    """Finds a client by its metadata document's URL."""

    def __init__(self, records: FrontRecords, guard: AddressGuard, cap: SourceCap) -> None:
        self._records = records
        self._guard = guard
        self._cap = cap

    async def __call__(self, client_id: str, scope: Scope) -> Client:
        refused = url_problem(client_id)
        if refused:
            raise OAuthError(
                "invalid_client", f"the client ID {client_id!r} cannot name a metadata document: {refused}"
            )
        cached = await self._records.get("client-document", client_id)
        if cached is not None:
            return Client.from_record(cached)
        await self._cap.take(scope, "client metadata documents fetched")
        document, max_age = await self._fetch(client_id)
        if not isinstance(document, dict) or document.get("client_id") != client_id:
            raise OAuthError("invalid_client", "the client's metadata document does not name its own URL as client_id")
        try:
            client, _ = client_metadata(document, client_id=client_id, from_document=True)
        except OAuthError as error:
            raise OAuthError("invalid_client", f"the client's metadata document: {error.description}") from None
        await self._records.put("client-document", client_id, client.record(), max_age)
        return client

    async def _fetch(self, url: str) -> tuple[object, int]:
        pool = Http11Pool(url, guard=self._guard, max_idle=0, connect_seconds=FETCH_SECONDS)
        try:
            async with asyncio.timeout(FETCH_SECONDS):
                async with pool.request("GET", url, {"accept": "application/json"}) as response:
                    body = b""
                    async for chunk in response.chunks():
                        body += chunk
                        if len(body) > MAX_DOCUMENT_BYTES:
                            raise OAuthError("invalid_client", "the client's metadata document is over 5 KB")
                    status, headers = response.status, response.headers
        except UpstreamAddressError as error:
            raise OAuthError(
                "invalid_client", f"the client's metadata document is not fetched: {error.reason}"
            ) from None
        except (TimeoutError, OSError, HttpProtocolError, HttpRequestError, asyncio.IncompleteReadError):
            raise OAuthError("invalid_client", "the client's metadata document could not be fetched") from None
        finally:
            await pool.aclose()
        if status != 200:
            raise OAuthError("invalid_client", f"the client's metadata document answered {status}")
        try:
            document = json.loads(body)
        except (UnicodeDecodeError, ValueError):
            raise OAuthError("invalid_client", "the client's metadata document is not JSON") from None
        match = _MAX_AGE.search(headers.get("cache-control", ""))
        age = int(match.group(1)) if match else DEFAULT_CACHE_SECONDS
        return document, min(max(age, MIN_CACHE_SECONDS), MAX_CACHE_SECONDS)
