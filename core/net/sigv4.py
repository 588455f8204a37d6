"""AWS Signature Version 4 for one HTTP request, with the standard library alone: what sends spans to X-Ray's OTLP
endpoint signs with (`stratus.otel_tracing`), so tracing to X-Ray imports no AWS SDK on a cold start.

The steps are AWS's (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html):
a canonical request of the method, the path, the query, the signed headers and the body's SHA-256; a string to sign
naming the credential scope (`<date>/<region>/<service>/aws4_request`); a key derived from the secret through the
scope's parts; the signature in the `Authorization` header. The signed headers are `content-type` (when there is
one), `host`, `x-amz-date` and, with temporary credentials, `x-amz-security-token`.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote, urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    token: str = ""

    def __repr__(self) -> str:
        return "Credentials(access_key=..., secret_key=..., token=...)"


def environment_credentials(environ: Mapping[str, str] = os.environ) -> Credentials | None:
    """The credentials Lambda gives the function's role in its environment (None when they are not there)."""
    key, secret = environ.get("AWS_ACCESS_KEY_ID", ""), environ.get("AWS_SECRET_ACCESS_KEY", "")
    if not key or not secret:
        return None
    return Credentials(key, secret, environ.get("AWS_SESSION_TOKEN", ""))


def signed_headers(
    method: str,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    credentials: Credentials,
    *,
    region: str,
    service: str,
    now: datetime | None = None,
) -> dict[str, str]:
    """The headers that sign the request: `x-amz-date`, `x-amz-security-token` (temporary credentials) and
    `Authorization`; `headers` are the request's own, of which `content-type` is signed."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    stamp, day = moment.strftime("%Y%m%dT%H%M%SZ"), moment.strftime("%Y%m%d")
    parts = urlsplit(url)
    host = parts.netloc
    if (parts.scheme, parts.port) in (("https", 443), ("http", 80)):
        host = parts.hostname or host
    signing = {"host": host, "x-amz-date": stamp}
    content_type = next((value for name, value in headers.items() if name.lower() == "content-type"), None)
    if content_type is not None:
        signing["content-type"] = content_type
    if credentials.token:
        signing["x-amz-security-token"] = credentials.token
    names = sorted(signing)
    canonical = "\n".join(
        (
            method.upper(),
            quote(parts.path or "/", safe="/-_.~"),
            _canonical_query(parts.query),
            "".join(f"{name}:{' '.join(signing[name].split())}\n" for name in names),
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        )
    )
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join((ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()))
    key = f"AWS4{credentials.secret_key}".encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    signed = {"x-amz-date": stamp}
    if credentials.token:
        signed["x-amz-security-token"] = credentials.token
    signed["Authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key}/{scope}, SignedHeaders={';'.join(names)}, "
        f"Signature={signature}"
    )
    return signed


def _canonical_query(query: str) -> str:
    pairs = sorted((quote(name, safe="-_.~"), quote(value, safe="-_.~")) for name, value in parse_qsl(query, True))
    return "&".join(f"{name}={value}" for name, value in pairs)
