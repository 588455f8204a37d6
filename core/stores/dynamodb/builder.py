"""The DynamoDB backend's builder: every store over one table."""

from __future__ import annotations

from typing import Any

from stratus.stores.base import StoreOptions, Stores
from stratus.stores.dynamodb.cache import DynamoCacheStore
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.limits import DynamoBreakerStore, DynamoGate, DynamoRateLimitStore
from stratus.stores.dynamodb.sessions import DynamoSessionStore
from stratus.stores.dynamodb.streams import DynamoEventLogStore, DynamoPendingRequestStore
from stratus.stores.dynamodb.table import DynamoTable
from stratus.stores.dynamodb.tasks import DynamoTaskStore
from stratus.stores.lazy import LazyClient
from stratus.stores.urls import StoreUrl


def build(store: StoreUrl, options: StoreOptions) -> Stores:
    """Every store over the table `store` names (a `StoresBuilder`); boto3 is imported when the first request needs
    the client."""
    return dynamodb_stores(LazyClient(lambda: dynamodb_client(timeout=options.timeout)), store.table, options)


def dynamodb_stores(client: Any, table: str, options: StoreOptions) -> Stores:
    """Every store over one table, reached through `client`."""
    dynamo = DynamoTable(client, table, options.prefix, timeout=options.timeout, clock=options.clock)
    sessions = DynamoSessionStore(
        dynamo,
        ttl_seconds=options.session_ttl_seconds,
        max_sessions=options.max_sessions,
        max_per_principal=options.max_sessions_per_principal,
    )
    rate_limits = DynamoRateLimitStore(dynamo)
    breakers = DynamoBreakerStore(dynamo)
    return Stores(
        sessions=sessions,
        rate_limits=rate_limits,
        breakers=breakers,
        events=DynamoEventLogStore(dynamo, ttl_seconds=options.session_ttl_seconds),
        pending=DynamoPendingRequestStore(dynamo),
        tasks=DynamoTaskStore(dynamo),
        cache=DynamoCacheStore(dynamo),
        gate=DynamoGate(sessions, rate_limits, breakers),
        close=dynamo.close,
    )
