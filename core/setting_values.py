"""How a setting's text becomes its value; each raises ValueError saying what is accepted."""

from __future__ import annotations


def csv(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def positive_int(value: str) -> int:
    if not value.strip().isdigit() or int(value) <= 0:
        raise ValueError("must be a positive integer")
    return int(value)


def flag(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("must be true or false")
    return lowered == "true"


def positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not 0 < number < float("inf"):
        raise ValueError("must be a positive number of seconds, e.g. 2.5")
    return number


def seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not 0 <= number < float("inf"):
        raise ValueError("must be 0 or a positive number of seconds, e.g. 2.5")
    return number


def count(value: str) -> int:
    if not value.strip().isdigit():
        raise ValueError("must be 0 or a positive integer")
    return int(value)
