"""Client ID metadata documents (the MCP 2025-11-25 authorization spec's preferred registration): a client whose ID
is an https URL is described by the JSON document at that URL, whose `client_id` must be that URL.

The URL comes from whoever starts a sign-in, so it is fetched as the gateway fetches its upstreams: every address
its host resolves to is checked and the connection goes to a checked address (core/net/addresses.py: no
loopback, private, link-local or metadata-service address unless STRATUS_GATEWAY_ALLOWED_NETWORKS allows it), with
a time limit and a size limit. A document is kept in the store for its `Cache-Control: max-age`, between one minute
and one day (five minutes when it names none).
"""

from __future__ import annotations

import asyncio
import json
import re
from urllib.parse import urlsplit

from stratus.net.addresses import AddressGuard, UpstreamAddressError
from stratus.net.http11 import Http11Pool, HttpProtocolError, HttpRequestError
from stratus.transport.oauth.clients import Client, client_metadata
from stratus.transport.oauth.records import FrontRecords
from stratus.transport.oauth.replies import OAuthError

FETCH_SECONDS = 5.0
MAX_DOCUMENT_BYTES = 5 * 1024
"""The draft's suggested bound: a client's metadata is a few hundred bytes."""
DEFAULT_CACHE_SECONDS = 300
MIN_CACHE_SECONDS = 60
MAX_CACHE_SECONDS = 86400
_MAX_AGE = re.compile(r"max-age=(\d+)")


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

    def __init__(self, records: FrontRecords, guard: AddressGuard) -> None:
        self._records = records
        self._guard = guard

    async def __call__(self, client_id: str) -> Client:
        refused = url_problem(client_id)
        if refused:
            raise OAuthError(
                "invalid_client", f"the client ID {client_id!r} cannot name a metadata document: {refused}"
            )
        cached = await self._records.get("client-document", client_id)
        if cached is not None:
            return Client.from_record(cached)
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
