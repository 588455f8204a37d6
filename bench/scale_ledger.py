"""Per-key accounting of the store work the simulation (bench/scale_sim.py) drives, taken on the real clients' wire:

- DynamoDB: botocore's event hooks on the client (`before-parameter-build` keeps a request's parameters in its
  context, `after-call` counts it with its answer): requests per operation, and per partition key the read and
  write units it costs, estimated from the items' sizes the way DynamoDB bills them
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/provisioned-capacity-mode.html#read-write-capacity-units:
  a read unit is one strongly consistent read of up to 4 KB, half for an eventually consistent one; a write unit is
  one write of up to 1 KB; https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling:
  twice that inside a transaction). An update's item size is not on the wire: it is billed as 1 KB.
- Redis: a redis-py connection class that records every command it packs (its keys: a script's KEYS, a plain
  command's first key) and every socket write (one round trip). A script counts as one operation on its slot.

Keys are grouped into families: a segment that is a random id (16 characters or more with a digit, `_` or `-`;
or 22 or more: a 24-byte URL-safe token may be all letters) becomes `<id>`, a number `<k>`, so `race#roster#17`
and `race#roster#3` are both `race#roster#<k>`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Connection
from redis.crc import key_slot

_ID = re.compile(r"^(?=.*[0-9_-])[A-Za-z0-9_-]{16,}$|^[A-Za-z0-9_-]{22,}$|^[0-9a-f]{16,}$")
_NUMBER = re.compile(r"^[0-9]+$")
_SEGMENTS = re.compile(r"([#:{}|/])")


def family(key: str) -> str:
    """The key with its ids and shard numbers replaced: what keys of the same role share."""
    parts = _SEGMENTS.split(key)
    return "".join("<id>" if _ID.match(part) else "<k>" if _NUMBER.match(part) else part for part in parts)


@dataclass
class Tally:
    """What one request kind cost: requests (round trips) and per-key read and write operations (DynamoDB: units)."""

    requests: Counter[str] = field(default_factory=Counter)
    reads: Counter[str] = field(default_factory=Counter)
    writes: Counter[str] = field(default_factory=Counter)
    item_writes: Counter[str] = field(default_factory=Counter)
    """Writes per item (partition and sort key): DynamoDB's per-item limit of about 1,000 a second."""


class Ledger:
    """Tallies by request kind; `kind` names the kind the next requests belong to."""

    def __init__(self) -> None:
        self.kind = "setup"
        self.tallies: dict[str, Tally] = defaultdict(Tally)

    @property
    def tally(self) -> Tally:
        return self.tallies[self.kind]


def _size(value: Any) -> int:
    """An item's size, about as DynamoDB counts it (names and values' bytes)."""
    return len(json.dumps(value, separators=(",", ":")))


def _pk(key: dict[str, Any]) -> str:
    return str(key["PK"]["S"])


def _item(key: dict[str, Any]) -> str:
    return f"{key['PK']['S']} / {key['SK']['S']}"


class DynamoWire:
    """Counts every request of the clients it listens to into a ledger."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.answered = 0

    def listen(self, client: Any) -> None:
        client.meta.events.register("before-parameter-build.dynamodb", self._sent)
        client.meta.events.register("after-call.dynamodb", self._answered)

    def _sent(self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        context["scale_params"] = json.loads(json.dumps(params))  # before botocore serializes them

    def _answered(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        params = context.get("scale_params")
        if params is None:
            return
        self.answered += 1
        if self.answered % 50 == 0:
            # moto keeps a copy of the table for each transaction in its registry of model instances (behind its
            # dashboard; the tables are untouched): drop them, or the process grows by gigabytes.
            from moto.core.model_instances import reset_model_data

            reset_model_data()
        tally, name = self.ledger.tally, model.name
        tally.requests[name] += 1
        if name == "TransactWriteItems":
            for action in params["TransactItems"]:
                ((kind, write),) = action.items()
                self._write(tally, write, 2, kind)
        elif name in ("PutItem", "UpdateItem", "DeleteItem"):
            self._write(tally, params, 1, name)
        elif name == "BatchWriteItem":
            for requests in params["RequestItems"].values():
                for request in requests:
                    ((kind, write),) = request.items()
                    self._write(tally, write, 1, kind)
        elif name == "GetItem":
            found = parsed.get("Item")
            tally.reads[_pk(params["Key"])] += _read_units(found, params.get("ConsistentRead", False))
        elif name == "BatchGetItem":
            for table, request in params["RequestItems"].items():
                consistent = request.get("ConsistentRead", False)
                answered = {_item(item): item for item in parsed.get("Responses", {}).get(table, [])}
                for key in request["Keys"]:
                    tally.reads[_pk(key)] += _read_units(answered.get(_item(key)), consistent)
        elif name == "Query":
            pk = next(v["S"] for v in params["ExpressionAttributeValues"].values() if "S" in v)
            size = sum(_size(item) for item in parsed.get("Items", []))
            units = max(1, math.ceil(size / 4096)) * (1 if params.get("ConsistentRead") else 0.5)
            tally.reads[pk] += units

    def _write(self, tally: Tally, write: dict[str, Any], factor: int, kind: str) -> None:
        key = write.get("Key") or write["Item"]
        size = _size(write["Item"]) if "Item" in write else 1024
        tally.writes[_pk(key)] += factor * max(1, math.ceil(size / 1024))
        tally.item_writes[_item(key)] += 1


def _read_units(item: dict[str, Any] | None, consistent: bool) -> float:
    units = max(1, math.ceil(_size(item or {}) / 4096))
    return units if consistent else units / 2


_NO_KEYS = {
    "PING", "INFO", "HELLO", "CLIENT", "SELECT", "SCRIPT", "CLUSTER", "READONLY", "COMMAND", "MULTI", "EXEC",
    "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "SSUBSCRIBE", "SUNSUBSCRIBE", "AUTH", "ECHO",
}  # fmt: skip
_MANY_KEYS = {"DEL", "UNLINK", "EXISTS", "MGET", "TOUCH"}


def command_keys(args: tuple[Any, ...]) -> list[str]:
    """The keys a command names (a script's KEYS; a plain command's first key, all of DEL/MGET...)."""
    text = [arg.decode() if isinstance(arg, bytes) else str(arg) for arg in args]
    name = text[0].upper()
    if name in ("EVALSHA", "EVAL", "FCALL", "EVALSHA_RO", "EVAL_RO"):
        return text[3 : 3 + int(text[2])]
    if name in _NO_KEYS or len(text) < 2:
        return []
    return text[1:] if name in _MANY_KEYS else [text[1]]


class RedisWire:
    """Where `KeyedConnection`s count: one ledger for every connection of the process."""

    ledger = Ledger()


class KeyedConnection(Connection):
    """A real redis-py connection that records each command's keys and each round trip in `RedisWire.ledger`."""

    def pack_command(self, *args: Any) -> Any:
        tally = RedisWire.ledger.tally
        keys = command_keys(args)
        name = (args[0].decode() if isinstance(args[0], bytes) else str(args[0])).upper()
        for key in keys:
            tally.writes[key] += 1  # Redis: one operation on the key's shard, read or write alike
        if not keys:
            tally.reads[f"(no key: {name})"] += 1
        return super().pack_command(*args)

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        RedisWire.ledger.tally.requests["round trip"] += 1
        await super().send_packed_command(command, check_health)


def slot(key: str) -> int:
    return int(key_slot(key.encode()))
