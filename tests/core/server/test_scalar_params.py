"""Plain parameters (int, float, str, bool) skip pydantic, and get exactly what pydantic would give them."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import Field

from stratus import McpServer
from stratus.server.signature import ArgumentsError, Signature


def plain_server() -> McpServer:
    server = McpServer("plain")

    @server.tool()
    def search(query: str, page_size: int = 10, min_score: float = 0.5, exact_match: bool = False) -> float:
        """Search.

        Args:
            query: what to look for.
            page_size: results per page.
        """
        return float(page_size)

    @server.tool()
    def ratio(x2y: int) -> float:
        """A ratio."""
        return x2y

    return server


def pydantic_schema(signature: Signature) -> dict[str, Any]:
    schema = signature.model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    schema["type"] = "object"
    return schema


@pytest.mark.parametrize("name", ["search", "ratio"])
def test_plain_schemas_are_the_ones_pydantic_writes(name: str) -> None:
    signature = plain_server().tools[name].signature
    assert signature.plain
    assert json.dumps(signature.json_schema()) == json.dumps(pydantic_schema(signature))


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "q"},
        {"query": "q", "page_size": 3, "min_score": 1, "exact_match": True},
        {"query": "q", "min_score": 0.25, "ignored_extra": [1]},
    ],
)
def test_exact_values_take_the_fast_path_and_match_pydantic(arguments: dict[str, Any]) -> None:
    signature = plain_server().tools["search"].signature
    fast = signature.validate(arguments)
    model = signature.model.model_validate(arguments)
    assert fast == {name: getattr(model, name) for name in fast}
    assert [type(value) for value in fast.values()] == [type(getattr(model, name)) for name in fast]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"query": "q", "page_size": "7"}, {"page_size": 7}),  # pydantic's lax conversion still applies
        ({"query": "q", "exact_match": "true"}, {"exact_match": True}),
    ],
)
def test_other_values_go_to_pydantic_which_converts_them(arguments: dict[str, Any], expected: dict[str, Any]) -> None:
    converted = plain_server().tools["search"].signature.validate(arguments)
    assert {key: converted[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({}, "query: Field required"),
        ({"query": "q", "page_size": 1.5}, "page_size: Input should be a valid integer"),
        ({"query": 5}, "query: Input should be a valid string"),
    ],
)
def test_bad_values_are_explained_by_pydantic(arguments: dict[str, Any], problem: str) -> None:
    with pytest.raises(ArgumentsError) as refused:
        plain_server().tools["search"].signature.validate(arguments)
    assert refused.value.problems[0].startswith(problem)


def test_plain_results_match_pydantic_serialization() -> None:
    tool = plain_server().tools["ratio"]
    assert tool.result(3) == {
        "content": [{"type": "text", "text": '{"result":3.0}'}],
        "structuredContent": {"result": 3.0},
    }
    assert tool.output_schema() == {
        "type": "object",
        "properties": {"result": {"type": "number"}},
        "required": ["result"],
    }
    from pydantic import TypeAdapter

    assert TypeAdapter(float).dump_python(3, mode="json") == 3.0
    assert TypeAdapter(float).json_schema(mode="serialization") == {"type": "number"}


def test_annotated_or_model_parameters_are_not_plain() -> None:
    server = McpServer("rich")

    @server.tool()
    def bounded(n: Annotated[int, Field(ge=0)], label: str | None = None) -> str:
        """Bounded."""
        return str(n)

    assert not server.tools["bounded"].signature.plain
