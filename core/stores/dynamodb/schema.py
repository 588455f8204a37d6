"""The table Stratus keeps its state in: its definition (keys, TTL attribute), and creating it for local runs."""

from __future__ import annotations

from typing import Any


def table_definition(table: str) -> dict[str, Any]:
    """The table: `PK` + `SK` strings, on-demand capacity (template.yaml declares the same)."""
    return {
        "TableName": table,
        "AttributeDefinitions": [
            {"AttributeName": "PK", "AttributeType": "S"},
            {"AttributeName": "SK", "AttributeType": "S"},
        ],
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        "BillingMode": "PAY_PER_REQUEST",
    }


def create_table(client: Any, table: str) -> None:
    """Create the table with its key schema and the `expires` TTL attribute, and wait until it is active."""
    client.create_table(**table_definition(table))
    client.get_waiter("table_exists").wait(TableName=table, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    client.update_time_to_live(TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires"})
