"""A part built the first time it is used, so that what a server never uses is never imported (a cold start pays for
every module)."""

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class BuiltOnUse(Generic[T]):
    """`build()`'s result, made on the first call and kept."""

    __slots__ = ("_build", "_part")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._part: T | None = None

    def __call__(self) -> T:
        if self._part is None:
            self._part = self._build()
        return self._part

    @property
    def built(self) -> T | None:
        """The part, if it was used; None otherwise (nothing is built to answer)."""
        return self._part
