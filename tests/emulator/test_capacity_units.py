"""The request units `stratus local` bills a DynamoDB request, against the examples of DynamoDB's guide
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html)."""

from __future__ import annotations

from stratus.emulator.capacity_units import consumed, item_size


def _item(size: int) -> dict[str, dict[str, str]]:
    """An item of `size` bytes: its key's name and value, and a padding string."""
    key = {"PK": {"S": "k"}}
    return {**key, "d": {"S": "x" * (size - item_size(key) - 1)}}


def test_a_get_of_an_8_kb_item_takes_two_units_one_when_eventually_consistent() -> None:
    answer = {"Item": _item(8 * 1024)}
    assert consumed("GetItem", {"ConsistentRead": True}, answer) == (2, 0)
    assert consumed("GetItem", {}, answer) == (1, 0)
    assert consumed("GetItem", {}, {}) == (0.5, 0)  # nothing found: the minimum


def test_a_batch_get_rounds_each_item_and_a_query_rounds_their_sum() -> None:
    small, large = _item(1536), _item(6656)  # 1.5 KB and 6.5 KB: 4 KB + 8 KB for a batch, 8 KB for a query
    batch = {"RequestItems": {"t": {"Keys": [{}, {}], "ConsistentRead": True}}}
    assert consumed("BatchGetItem", batch, {"Responses": {"t": [small, large]}}) == (3, 0)
    assert consumed("Query", {"ConsistentRead": True}, {"Items": [small, large]}) == (2, 0)
    assert consumed("Query", {}, {"Items": []}) == (0.5, 0)


def test_writes_take_a_unit_per_kb_and_twice_that_in_a_transaction() -> None:
    assert consumed("PutItem", {"Item": _item(1500)}, {}) == (0, 2)
    transaction = {"TransactItems": [{"Put": {"Item": _item(500)}}, {"Update": {}}]}
    assert consumed("TransactWriteItems", transaction, {}) == (0, 4)
