"""Small shared values with a time to live, and claims (first writer wins), as DynamoDB items."""

from __future__ import annotations

from stratus.stores.dynamodb.table import TableItems, number, number_of, write_token


class DynamoCacheStore(TableItems):
    """Values as items with their expiry (checked on read, collected by the table's TTL)."""

    kind = "cache"

    async def get(self, key: str) -> str | None:
        item = await self.table.get(self.key(key))
        if item is None or number_of(item, "expires") <= self.table.clock():
            return None
        return str(item["value"]["S"])

    async def set(self, key: str, value: str, ttl_seconds: float) -> None:
        expires = number(self.table.clock() + ttl_seconds)
        await self.table.call("put_item", Item={**self.key(key), "value": {"S": value}, "expires": expires})

    async def delete(self, key: str) -> None:
        await self.table.call("delete_item", Key=self.key(key))

    async def claim(self, key: str, ttl_seconds: float) -> bool:
        now = self.table.clock()
        token = write_token()
        item = {**self.key(key), "value": {"S": "1"}, "expires": number(now + ttl_seconds), "w": {"S": token}}
        return await self.table.write_once(
            "put_item",
            token,
            Item=item,
            ConditionExpression="attribute_not_exists(PK) OR expires <= :now",
            ExpressionAttributeValues={":now": number(now)},
        )
