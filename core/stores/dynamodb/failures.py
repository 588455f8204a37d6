"""Why a DynamoDB store failed, in one line for the operator: the exception's class, the endpoint and region, the
service's error code, and what fixes it (never a credential)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit


def endpoint(client: Any) -> str:
    """The service's endpoint and region (`AWS_ENDPOINT_URL_DYNAMODB` or AWS's own), without any user part."""
    try:
        url = urlsplit(str(client.meta.endpoint_url))
        return f"{url.scheme}://{url.hostname}{f':{url.port}' if url.port else ''} ({client.meta.region_name})"
    except Exception:  # noqa: BLE001 - no client could be made (no region): a diagnosis must never fail
        return "DynamoDB"


def diagnosis(error: BaseException, client: Any, table: str) -> str:
    """The cause of `error` (a botocore or socket error of a call on `table`) and its fix."""
    from botocore import exceptions

    kind = type(error).__name__
    if isinstance(error, exceptions.NoRegionError):
        return f"no AWS region is set ({kind}): set AWS_REGION to the table's region (e.g. AWS_REGION=us-east-1)"
    if isinstance(error, exceptions.NoCredentialsError | exceptions.PartialCredentialsError):
        return (
            f"no AWS credentials were found ({kind}): set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or run with a role"
        )
    at = endpoint(client)
    if isinstance(error, exceptions.ClientError):
        code = str(error.response.get("Error", {}).get("Code", "")) or kind
        if code == "ResourceNotFoundException":
            return (
                f"the DynamoDB table {table} does not exist at {at} ({code}): create it with "
                f"`stratus store create --store dynamodb://{table}`, or point STRATUS_STORE at the stack's table"
            )
        if code in ("AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException"):
            return f"DynamoDB at {at} refused the request on table {table} ({code}): check the credentials' access"
        return f"DynamoDB at {at} answered {code} on table {table}"
    if isinstance(error, exceptions.EndpointConnectionError | exceptions.ConnectionError | OSError):
        return f"DynamoDB at {at} cannot be reached ({kind}): check AWS_ENDPOINT_URL_DYNAMODB and the network"
    if isinstance(error, TimeoutError):
        return f"DynamoDB at {at} did not answer in time ({kind}): raise STRATUS_STORE_TIMEOUT_SECONDS"
    return f"DynamoDB at {at} failed ({kind}) on table {table}"
