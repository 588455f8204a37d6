"""The read and write request units a DynamoDB request consumes on an on-demand table, from what it sent and got.

The rules (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html, and the item
sizes: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):

- a read is one unit per 4 KB of item (strongly consistent), half that eventually consistent, twice that in a
  transaction; a `GetItem` that finds nothing still takes the minimum; a `Query` or `Scan` adds up the sizes of the
  items it read and rounds once, one unit at least;
- a write is one unit per 1 KB of item, the larger of the item before and after; twice that in a transaction;
- an item's size is its attribute names' UTF-8 lengths plus its values': a string's UTF-8 length, a number's about
  one byte per two significant digits plus one, a binary's length, 1 for a boolean or null, and 3 bytes plus one per
  element, besides the elements, for a list or map.

The emulator sees a request and its answer, not the item an update or delete changed, so those count one unit per
item: exact for the items Stratus updates (sessions, counters, claims), which are under 1 KB.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any

READ_BLOCK = 4096
WRITE_BLOCK = 1024


def value_size(value: Mapping[str, Any]) -> int:
    """The size of one attribute value in DynamoDB's JSON (`{"S": ...}`, `{"N": ...}`, ...)."""
    ((kind, content),) = value.items()
    if kind == "S":
        return len(str(content).encode())
    if kind == "N":
        digits = str(content).lstrip("-").replace(".", "").strip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(base64.b64decode(content))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(each.encode()) for each in content)
    if kind == "NS":
        return sum(value_size({"N": each}) for each in content)
    if kind == "BS":
        return sum(len(base64.b64decode(each)) for each in content)
    if kind == "L":
        return 3 + sum(value_size(each) + 1 for each in content)
    if kind == "M":
        return 3 + sum(len(name.encode()) + value_size(each) + 1 for name, each in content.items())
    return 0


def item_size(item: Mapping[str, Any]) -> int:
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def _read(size: int, *, consistent: bool) -> float:
    units = max(1, math.ceil(size / READ_BLOCK))
    return units if consistent else units / 2


def _write(size: int) -> int:
    return max(1, math.ceil(size / WRITE_BLOCK))


def consumed(operation: str, request: Mapping[str, Any], answer: Mapping[str, Any]) -> tuple[float, float]:
    """The (read, write) request units of one successful request: `request` as sent, `answer` as DynamoDB gave it."""
    consistent = bool(request.get("ConsistentRead"))
    if operation == "GetItem":
        return _read(item_size(answer.get("Item") or {}), consistent=consistent), 0.0
    if operation in ("Query", "Scan"):
        return _read(sum(item_size(item) for item in answer.get("Items") or []), consistent=consistent), 0.0
    if operation == "BatchGetItem":
        reads = 0.0
        for table, asked in (request.get("RequestItems") or {}).items():
            found = (answer.get("Responses") or {}).get(table) or []
            missing = len(asked.get("Keys") or []) - len(found)
            each_consistent = bool(asked.get("ConsistentRead"))
            reads += sum(_read(item_size(item), consistent=each_consistent) for item in found)
            reads += max(0, missing) * _read(0, consistent=each_consistent)
        return reads, 0.0
    if operation == "TransactGetItems":
        found = [each.get("Item") or {} for each in answer.get("Responses") or []]
        return sum(2 * _read(item_size(item), consistent=True) for item in found), 0.0
    if operation == "PutItem":
        return 0.0, float(_write(item_size(request.get("Item") or {})))
    if operation in ("UpdateItem", "DeleteItem"):
        return 0.0, 1.0
    if operation == "BatchWriteItem":
        writes = 0
        for requests in (request.get("RequestItems") or {}).values():
            for each in requests:
                put = each.get("PutRequest")
                writes += _write(item_size(put.get("Item") or {})) if put else 1
        return 0.0, float(writes)
    if operation == "TransactWriteItems":
        writes = 0
        for action in request.get("TransactItems") or []:
            put = action.get("Put")
            writes += 2 * (_write(item_size(put.get("Item") or {})) if put else 1)
        return 0.0, float(writes)
    return 0.0, 0.0
