"""The demo server `stratus serve` runs when no --app is given: a few tools, a resource, a prompt."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, Field

from stratus import McpServer, ToolError

server = McpServer(
    "stratus-demo",
    "0.1.0",
    title="Stratus demo",
    instructions="A small demo: arithmetic, a forecast, a greeting prompt and a notes resource.",
)


class Unit(StrEnum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Forecast(BaseModel):
    city: str
    temperature: float
    unit: Unit


@server.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


@server.tool(annotations={"readOnlyHint": True})
async def forecast(city: Annotated[str, Field(min_length=1)], unit: Unit = Unit.CELSIUS) -> Forecast:
    """Tomorrow's temperature for a city (made up, deterministically)."""
    celsius = float(sum(map(ord, city)) % 35)
    temperature = celsius if unit is Unit.CELSIUS else celsius * 9 / 5 + 32
    return Forecast(city=city, temperature=temperature, unit=unit)


@server.tool()
def divide(numerator: float, denominator: float) -> float:
    """Divide two numbers; dividing by zero is reported to the model as a tool error."""
    if denominator == 0:
        raise ToolError("Cannot divide by zero")
    return numerator / denominator


@server.resource("demo://notes/welcome", mime_type="text/markdown")
def welcome_note() -> str:
    """A welcome note."""
    return "# Welcome\n\nThis server runs on Stratus."


@server.resource("demo://cities/{city}/population", mime_type="application/json")
def population(city: str) -> str:
    """A made-up population figure for a city."""
    return f'{{"city": "{city}", "population": {len(city) * 100_000}}}'


@server.prompt()
def greeting(name: str, style: Unit = Unit.CELSIUS) -> str:
    """Greet someone and tell them tomorrow's weather.

    Args:
        name: who to greet.
        style: the temperature unit to mention.
    """
    return f"Say hello to {name} and mention tomorrow's weather in {style.value}."
