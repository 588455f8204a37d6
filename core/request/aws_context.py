"""The API Gateway / Function URL request context of a request, wherever the front door put it.

Behind Mangum (the buffered shape) it is the Lambda event's `requestContext`. Behind the Lambda Web Adapter (the
streaming shape) the adapter passes the same object to the app as JSON in the `x-amzn-request-context` header
("Request Context" in https://github.com/awslabs/aws-lambda-web-adapter's README), replacing any header of that
name the client sent. Nothing else sets that header: on a plain server (`stratus serve`) the client writes it, so
it is read only where `STRATUS_TRUST_REQUEST_CONTEXT_HEADER` declares the adapter in front.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

REQUEST_CONTEXT_HEADER = "x-amzn-request-context"


def request_context(
    scope: Mapping[str, Any], headers: Mapping[str, str], *, trust_header: bool
) -> dict[str, Any] | None:
    """The request context, or None: none was given, or the header does not parse (not JSON, or nested too deep
    for the parser). A copy: the caller may keep or change it."""
    context = _given_context(scope, headers, trust_header)
    return dict(context) if context is not None else None


def request_domain(scope: Mapping[str, Any], headers: Mapping[str, str], *, trust_header: bool) -> str | None:
    """The API Gateway or Function URL domain the request arrived on (the context's `domainName`), lower-cased."""
    context = _given_context(scope, headers, trust_header)
    domain = context.get("domainName") if context is not None else None
    return domain.lower() if isinstance(domain, str) else None


def source_ip(context: Mapping[str, Any] | None) -> str | None:
    """The caller's address as the front door saw it: `http.sourceIp` (HTTP API payload 2.0, Function URLs) or
    `identity.sourceIp` (REST API payload 1.0). API Gateway writes it from the connection, not from any header."""
    if context is None:
        return None
    nested = context.get("http")
    address = nested.get("sourceIp") if type(nested) is dict else None
    if not address:
        nested = context.get("identity")
        address = nested.get("sourceIp") if type(nested) is dict else None
    return address if address and isinstance(address, str) else None


def _given_context(scope: Mapping[str, Any], headers: Mapping[str, str], trust_header: bool) -> dict[str, Any] | None:
    context: Any = None
    event = scope.get("aws.event")
    if isinstance(event, dict):  # the Lambda event, and everything in it, is parsed JSON: dicts, not other Mappings
        context = event.get("requestContext")
    elif trust_header and REQUEST_CONTEXT_HEADER in headers:
        try:
            context = json.loads(headers[REQUEST_CONTEXT_HEADER])
        except (ValueError, RecursionError):
            context = None
    return context if isinstance(context, dict) else None


def authorizer_claims(context: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Claims from a request context's `authorizer`: HTTP API JWT authorizers (`jwt.claims`), REST Cognito
    authorizers (`claims`) and Lambda authorizers (`lambda`, or the context keys themselves)."""
    authorizer = context.get("authorizer") if context is not None else None
    if not isinstance(authorizer, dict):
        return None
    jwt = authorizer.get("jwt")
    for nested in (
        jwt.get("claims") if isinstance(jwt, dict) else None,
        authorizer.get("claims"),
        authorizer.get("lambda"),
    ):
        if isinstance(nested, dict):
            return dict(nested)
    flat = {key: value for key, value in authorizer.items() if key not in ("integrationLatency", "principalId")}
    if "principalId" in authorizer and "sub" not in flat:
        flat["sub"] = authorizer["principalId"]
    return flat or None
