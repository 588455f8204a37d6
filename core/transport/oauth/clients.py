"""The clients the front knows: registered dynamically (RFC 7591), kept in the store for a time to live, or named by
a client ID metadata document's URL (fetched by `client_documents`); how their metadata is checked.

Redirect URIs are compared exactly, as registered (OAuth 2.1 section 4.1.1: no pattern, no prefix). One may be
https, http on a loopback host (RFC 8252 section 7.3: a native app's local listener), or a private-use scheme
(RFC 8252 section 7.1); never a script, data or file URL, and never with a fragment (RFC 6749 section 3.1.2).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

from stratus.transport.oauth.records import FrontRecords, digest
from stratus.transport.oauth.replies import OAuthError

AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
GRANT_TYPES = ("authorization_code", "refresh_token")
MAX_REDIRECT_URIS = 10
MAX_URI_LENGTH = 2000
MAX_NAME_LENGTH = 200
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
REFUSED_SCHEMES = ("javascript", "data", "file", "vbscript", "blob", "about", "ftp", "ws", "wss")

DocumentFetch = Callable[[str], Awaitable["Client"]]


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


def redirect_uri_problem(uri: Any) -> str | None:
    """Why `uri` cannot be a redirect URI, or None when it can."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_LENGTH:
        return f"a redirect URI must be a string of 1 to {MAX_URI_LENGTH} characters"
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return f"{uri!r} is not a URI"
    scheme = parts.scheme.lower()
    if not scheme:
        return f"{uri!r} is not an absolute URI"
    if parts.fragment or "#" in uri:
        return f"{uri!r} has a fragment, which a redirect URI must not"
    if scheme in REFUSED_SCHEMES:
        return f"{uri!r}: the {scheme} scheme is not allowed"
    if scheme in ("http", "https") and not host:
        return f"{uri!r} has no host"
    if scheme == "http" and host not in LOOPBACK_HOSTS:
        return f"{uri!r}: http is allowed only for a loopback host (localhost, 127.0.0.1, [::1]); use https"
    return None


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

    async def find(self, client_id: str) -> Client | None:
        """The client with this ID: registered here, or (an https URL) described by its metadata document.

        Raises:
            OAuthError: a metadata document that cannot be fetched or is not valid (`invalid_client`).
        """
        if client_id.startswith("https://") and self._documents is not None:
            return await self._documents(client_id)
        record = await self._records.get("client", client_id)
        return None if record is None else Client.from_record(record)
