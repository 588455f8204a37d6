"""How `Mcp-Name` and `Mcp-Param-*` carry a value in an HTTP header (2026-07-28): as it is when it is plain visible
ASCII, else in the Base64 sentinel form `=?base64?...?=` of its UTF-8. The server decodes what clients send; the
gateway encodes what it sends upstream."""

from __future__ import annotations

import base64
import binascii
import re

from stratus.errors import HeaderMismatchError, UnencodableTextError

_SENTINEL_PREFIX, _SENTINEL_SUFFIX = "=?base64?", "?="
_INVALID_VALUE_CHARACTER = re.compile(r"[^\t -~]")
_PLAIN_VALUE = r"[!-~]([\t -~]*[!-~])?"
"""Visible ASCII with inner spaces and tabs, nothing at either end: a value a header carries as it is (a string until
first used: compiling a pattern costs a cold start)."""


def encode_header_value(value: str) -> str:
    """`value` as `Mcp-Name` or an `Mcp-Param-*` header carries it: as it is when that is plain visible ASCII,
    (or empty), else in the Base64 sentinel form `=?base64?...?=` of its UTF-8: a value with non-ASCII, a control
    character such as CR or LF, or whitespace at either end, and a value that itself looks like the sentinel.

    Raises:
        UnencodableTextError: the value holds a lone surrogate, which has no UTF-8.
    """
    if value == "" or (
        re.fullmatch(_PLAIN_VALUE, value)
        and not (value.startswith(_SENTINEL_PREFIX) and value.endswith(_SENTINEL_SUFFIX))
    ):
        return value
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:
        raise UnencodableTextError("a value mirrored in a header") from None
    return f"{_SENTINEL_PREFIX}{base64.b64encode(encoded).decode('ascii')}{_SENTINEL_SUFFIX}"


def decode_header_value(name: str, raw: str) -> str:
    """A header value as the client meant it: checked for invalid characters, Base64 sentinel decoded."""
    # Visible ASCII and spaces (the usual value) pass without the pattern: `isprintable` alone allows no tab.
    if not (raw.isascii() and raw.isprintable()) and _INVALID_VALUE_CHARACTER.search(raw):
        raise HeaderMismatchError(f"Header mismatch: {name} contains characters not allowed in a header value")
    if raw.startswith(_SENTINEL_PREFIX) and raw.endswith(_SENTINEL_SUFFIX) and len(raw) >= 11:
        encoded = raw[len(_SENTINEL_PREFIX) : -len(_SENTINEL_SUFFIX)]
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise HeaderMismatchError(f"Header mismatch: {name} is not valid Base64-encoded UTF-8") from None
    return raw.strip()
