"""The fast path for handlers whose parameters are plain JSON scalars (`int`, `float`, `str`, `bool`).

Most tools take a few plain values. For them, checking arguments and writing their schema needs no pydantic,
so a Lambda cold start that serves such a tool never imports it (pydantic costs tens of milliseconds). Only a
value of exactly the declared type takes the fast path; anything else (a string for an int, a missing argument,
a nested model) goes to pydantic, which converts or explains exactly as it always does. Schemas written here
match pydantic's for the same signature (`tests/core/server/test_scalar_params.py` pins it).
"""

from __future__ import annotations

from typing import Any

JSON_TYPES: dict[Any, str] = {int: "integer", float: "number", str: "string", bool: "boolean"}


def is_plain(annotation: Any, default: Any, has_default: bool) -> bool:
    """Whether a parameter can take the fast path: a plain type, and a default (if any) of that very type."""
    if annotation not in JSON_TYPES:
        return False
    return not has_default or _exactly(annotation, default)


def _exactly(annotation: Any, value: Any) -> bool:
    if annotation is float:
        return type(value) in (int, float)
    return type(value) is annotation


def accept(annotation: Any, value: Any) -> tuple[bool, Any]:
    """(True, the value as the handler gets it) when `value` is exactly of the plain type, else (False, None)."""
    if not _exactly(annotation, value):
        return False, None
    return True, float(value) if annotation is float else value


def title(name: str) -> str:
    """A field's title as pydantic writes it."""
    return name.title().replace("_", " ")


def property_schema(
    name: str, annotation: Any, *, default: Any, has_default: bool, description: str | None
) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    if has_default:
        schema["default"] = default
    if description:
        schema["description"] = description
    schema["title"] = title(name)
    schema["type"] = JSON_TYPES[annotation]
    return schema
