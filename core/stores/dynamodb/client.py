"""The boto3 DynamoDB client, with botocore's timeouts and retry mode set explicitly (boto3 imported here only)."""

from __future__ import annotations

import os
from typing import Any


def dynamodb_client(*, timeout: float) -> Any:
    """A boto3 DynamoDB client (region, credentials and `AWS_ENDPOINT_URL_DYNAMODB` from the environment).

    `AWS_REGION` names the region when `AWS_DEFAULT_REGION` does not (Lambda sets both; boto3 reads only the second,
    and a newcomer sets the first)."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=timeout,
        read_timeout=timeout,
        retries={"mode": "standard", "max_attempts": 2},
        tcp_keepalive=True,
    )
    region = None if os.environ.get("AWS_DEFAULT_REGION") else os.environ.get("AWS_REGION") or None
    return boto3.client("dynamodb", config=config, region_name=region)
