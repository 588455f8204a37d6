"""A tool whose parameters cannot be described to a client fails when it is registered, naming the tool and the
parameter, instead of failing every `tools/list`."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stratus import McpServer
from stratus.server.signature import ToolSignatureError


class Plain:
    """A class pydantic cannot describe."""


def test_a_parameter_of_a_plain_class_fails_the_registration_naming_tool_and_parameter() -> None:
    server = McpServer("bad", "1")
    with pytest.raises(ToolSignatureError) as caught:

        @server.tool()
        def lookup(key: str, thing: Plain) -> str:
            return key

    assert (caught.value.tool, caught.value.parameter) == ("lookup", "thing")


def test_a_callable_parameter_fails_the_registration() -> None:
    server = McpServer("bad", "1")
    with pytest.raises(ToolSignatureError) as caught:

        @server.tool()
        def apply(fn: Callable[[int], int], value: int = 0) -> int:
            return fn(value)

    assert (caught.value.tool, caught.value.parameter) == ("apply", "fn")


def test_structured_parameters_still_register() -> None:
    server = McpServer("good", "1")

    @server.tool()
    def tag(names: list[str], weights: dict[str, float] | None = None) -> int:
        return len(names)
