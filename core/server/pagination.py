"""Opaque, tamper-checked cursors for list methods.

A cursor names the list it belongs to and the offset of the next page, signed with HMAC-SHA256 so a client
cannot forge or edit one. Any container holding the same key verifies it: there is no server-side state.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import TypeVar

from stratus.errors import InvalidParamsError

T = TypeVar("T")

_TAG_BYTES = 12


class Paginator:
    """Splits lists into pages and issues / checks the cursors between them."""

    def __init__(self, key: bytes, page_size: int) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self._key = key
        self.page_size = page_size

    def _tag(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:_TAG_BYTES]

    def encode(self, kind: str, offset: int) -> str:
        payload = json.dumps([kind, offset], separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(self._tag(payload) + payload).decode().rstrip("=")

    def decode(self, kind: str, cursor: object) -> int:
        """The offset a cursor points at.

        Raises:
            InvalidParamsError: the cursor is not one this server issued for this list.
        """
        if not isinstance(cursor, str) or len(cursor) > 256:
            raise InvalidParamsError("Invalid cursor")
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            tag, payload = raw[:_TAG_BYTES], raw[_TAG_BYTES:]
            if not hmac.compare_digest(tag, self._tag(payload)):
                raise ValueError("bad tag")
            issued_for, offset = json.loads(payload)
        except (ValueError, TypeError):
            raise InvalidParamsError("Invalid cursor") from None
        if issued_for != kind or not isinstance(offset, int) or offset < 0:
            raise InvalidParamsError("Invalid cursor")
        return offset

    def page(self, kind: str, items: Sequence[T], cursor: object) -> tuple[Sequence[T], str | None]:
        """One page of `items` and the cursor of the next page (None on the last page)."""
        offset = 0 if cursor is None else self.decode(kind, cursor)
        end = offset + self.page_size
        return items[offset:end], (self.encode(kind, end) if end < len(items) else None)
