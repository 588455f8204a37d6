"""Tasks as DynamoDB items, moved from state to state by conditional writes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stratus.stores.dynamodb.table import TableItems, number, number_of, write_token
from stratus.stores.records import TaskExistsError, TaskRecord

if TYPE_CHECKING:
    from stratus.stores.task_records import TaskOutcome


class DynamoTaskStore(TableItems):
    """Tasks as items; creation and status moves are conditional writes."""

    kind = "task"

    async def create(self, record: TaskRecord, ttl_seconds: float) -> None:
        from stratus.stores.task_records import encode_request

        now = self.table.clock()
        token = write_token()
        item = {
            **self.key(record.task_id),
            "principal": {"S": record.principal or ""},
            "status": {"S": record.status},
            "request": {"S": encode_request(record.request)},
            "created": number(now),
            "updated": number(now),
            "expires": number(now + ttl_seconds),
            "w": {"S": token},
        }
        created = await self.table.write_once(
            "put_item",
            token,
            Item=item,
            ConditionExpression="attribute_not_exists(PK) OR expires <= :now",
            ExpressionAttributeValues={":now": number(now)},
        )
        if not created:
            raise TaskExistsError(record.task_id)

    async def get(self, task_id: str) -> TaskRecord | None:
        from stratus.stores.task_records import decode_outcome, decode_request

        item = await self.table.get(self.key(task_id))
        if item is None or number_of(item, "expires") <= self.table.clock():
            return None
        return TaskRecord(
            task_id=task_id,
            principal=item["principal"]["S"] or None,
            status=item["status"]["S"],
            request=decode_request(item["request"]["S"]),
            outcome=decode_outcome(item["result"]["S"]) if "result" in item else None,
            created_at=number_of(item, "created"),
            updated_at=number_of(item, "updated"),
            expires_at=number_of(item, "expires"),
        )

    async def update(self, task_id: str, *, status: str, outcome: TaskOutcome | None, expect: tuple[str, ...]) -> bool:
        from stratus.stores.task_records import encode_outcome

        result = encode_outcome(outcome) if outcome is not None else None
        now = self.table.clock()
        token = write_token()
        names = {f":expect{index}": {"S": value} for index, value in enumerate(expect)}
        values = {":status": {"S": status}, ":now": number(now), ":token": {"S": token}, **names}
        update = "SET #status = :status, updated = :now, w = :token"
        if result is not None:
            update += ", #result = :result"
            values[":result"] = {"S": result}
        return await self.table.write_once(
            "update_item",
            token,
            Key=self.key(task_id),
            UpdateExpression=update,
            ConditionExpression=f"expires > :now AND #status IN ({', '.join(names)})",
            ExpressionAttributeNames={"#status": "status", "#result": "result"}
            if result is not None
            else {"#status": "status"},
            ExpressionAttributeValues=values,
        )
