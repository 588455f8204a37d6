"""Every JSON-RPC answer and every tool's text content is written by `stratus.json_text.compact`: the same text
`json.dumps` writes with compact separators and UTF-8 kept, for every kind of value a tool may return."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest

from stratus.json_text import compact


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


VALUES: list[Any] = [
    "plain",
    'quote " backslash \\ control \x01 line separator \u2028 accent é emoji \U0001f600',
    0,
    -(2**70),
    1.5,
    float("nan"),
    float("-inf"),
    True,
    None,
    [],
    {},
    (1, "two"),
    {"nested": [1, {"deep": None}], 7: "int key", 2.5: "float key", True: "bool key", None: "null key"},
    Level.HIGH,
    Name("a str subclass"),
    {"level": Level.HIGH, "name": Name("x")},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_the_text_is_what_json_dumps_writes(value: Any) -> None:
    assert compact(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("value", [object(), {"a": {1, 2}}, {(1, 2): "tuple key"}], ids=["object", "set", "key"])
def test_a_value_json_cannot_hold_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError):
        compact(value)


def test_a_value_that_contains_itself_fails_instead_of_recursing_forever() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(RecursionError):
        compact({"result": loop})
    assert compact({"after": "the failure"}) == '{"after":"the failure"}'
