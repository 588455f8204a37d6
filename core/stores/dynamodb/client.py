"""The boto3 DynamoDB client, with botocore's timeouts and retry mode set explicitly (boto3 imported here only)."""

from __future__ import annotations

from typing import Any


def dynamodb_client(*, timeout: float) -> Any:
    """A boto3 DynamoDB client (region, credentials and `AWS_ENDPOINT_URL_DYNAMODB` from the environment)."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=timeout,
        read_timeout=timeout,
        retries={"mode": "standard", "max_attempts": 2},
        tcp_keepalive=True,
    )
    return boto3.client("dynamodb", config=config)
