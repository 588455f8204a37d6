"""What a TransactWriteItems costs moto as its table grows (docs/scale.md, the racing-creates test):
`python bench/moto_transactions.py` (the project's venv). moto in process: the same backend its server runs.

For tables of 0, 1,000, 4,000 and 10,000 plain items, the mean time of 20 transactions of three items (two puts and
an update, like a create under a session limit) and of 20 PutItems. Prints a Markdown table.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any

from moto import mock_aws

SIZES = (0, 1_000, 4_000, 10_000)
ROUNDS = 20


def item(prefix: str) -> dict[str, Any]:
    return {"PK": {"S": f"{prefix}#{secrets.token_hex(8)}"}, "SK": {"S": "x"}, "v": {"S": "y" * 200}}


def transaction(table: str) -> list[dict[str, Any]]:
    counter = {"PK": {"S": "count"}, "SK": {"S": "x"}}
    return [
        {"Put": {"TableName": table, "Item": item("session")}},
        {"Put": {"TableName": table, "Item": item("entry")}},
        {
            "Update": {
                "TableName": table,
                "Key": counter,
                "UpdateExpression": "ADD c :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
    ]


def main() -> None:
    from stratus.stores.dynamodb.client import dynamodb_client
    from stratus.stores.dynamodb.schema import create_table

    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")
    print("| Items in the table | TransactWriteItems (3 items) | PutItem |\n|---|---|---|")
    with mock_aws():
        client = dynamodb_client(timeout=10.0)
        create_table(client, "bench")
        for size in SIZES:
            items = client.describe_table(TableName="bench")["Table"].get("ItemCount", 0)
            fill = [item("plain") for _ in range(max(0, size - items))]
            for start in range(0, len(fill), 25):
                batch = [{"PutRequest": {"Item": one}} for one in fill[start : start + 25]]
                client.batch_write_item(RequestItems={"bench": batch})
            started = time.perf_counter()
            for _ in range(ROUNDS):
                client.transact_write_items(TransactItems=transaction("bench"))
            transact = (time.perf_counter() - started) / ROUNDS
            started = time.perf_counter()
            for _ in range(ROUNDS):
                client.put_item(TableName="bench", Item=item("put"))
            put = (time.perf_counter() - started) / ROUNDS
            print(f"| {size:,} | {transact * 1000:.1f} ms | {put * 1000:.1f} ms |", flush=True)


if __name__ == "__main__":
    main()
