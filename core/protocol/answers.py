"""The client's answers to a stored task's or suspended call's questions, kept in the cache store beside the record
for as long as it lives, by question key: what its next run answers its questions with."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.stores.base import CacheStore
    from stratus.stores.records import TaskRecord


def answer_key(record_id: str, key: str) -> str:
    return f"task:{record_id}:answer:{key}"


class KeptAnswers:
    """The answers kept for records in `cache`."""

    def __init__(self, cache: CacheStore) -> None:
        self.cache = cache

    async def of(self, record_id: str, keys: list[str]) -> JsonObject:
        """The answers kept for the record's questions `keys`, by key."""
        answers: JsonObject = {}
        for key in keys:
            stored = await self.cache.get(answer_key(record_id, key))
            if stored is not None:
                answers[key] = json.loads(stored)
        return answers

    async def outstanding(self, record: TaskRecord) -> JsonObject:
        """The record's questions its client has not answered yet (answered keys drop out at once)."""
        asked: JsonObject = (record.outcome.input_requests if record.outcome is not None else None) or {}
        answered = await self.of(record.task_id, list(asked))
        return {key: request for key, request in asked.items() if key not in answered}

    async def keep(self, record: TaskRecord, responses: dict[str, JsonObject]) -> tuple[bool, bool]:
        """Keep the answers among `responses` to the record's outstanding questions (others are ignored): whether any
        was kept, and whether none is outstanding now."""
        outstanding = await self.outstanding(record)
        ttl = max(record.expires_at - record.created_at, 1.0)  # answers live no longer than the record
        kept = [key for key in responses if key in outstanding]
        for key in kept:
            await self.cache.set(answer_key(record.task_id, key), json.dumps(responses[key]), ttl)
        return bool(kept), bool(kept) and not await self.outstanding(record)


def reply_answer(reply: JsonObject) -> JsonObject | None:
    """What a client's reply (`{"result": ...}` or `{"error": ...}`) answers a question with: its result, or the error
    it refused with (`Context` raises it as `ClientError`); None for a reply that is neither."""
    if "error" in reply:
        return {"error": reply["error"]} if isinstance(reply["error"], dict) else None
    result = reply.get("result")
    return result if isinstance(result, dict) else None
