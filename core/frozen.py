"""`Frozen`: the base of the public policy values (`RetryPolicy`, `BreakerPolicy`, `RateLimit`).

They behave as frozen dataclasses do (keyword or positional construction, equality, hash and repr by their fields, no
assignment after construction) without `@dataclass`: building one generates and compiles its methods at import,
about 4 M instructions each on every cold start (docs/benchmarks.md, "Cold start").
"""

from typing import Any


class Frozen:
    """An immutable value whose fields are its `__slots__`, set once by the subclass's `__init__` through `_set`."""

    __slots__ = ()

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def _names(self) -> tuple[str, ...]:
        return tuple(self.__slots__)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._names())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: build a new one")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: build a new one")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Frozen) or type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._names())
        return f"{type(self).__name__}({shown})"
