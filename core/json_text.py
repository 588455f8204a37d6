"""Compact JSON text (no spaces, non-ASCII kept as UTF-8): how Stratus writes every JSON-RPC answer and a tool's
text content.

One C encoder, built once, writes every value. A value that contains itself fails with RecursionError (an ordinary
exception, at the interpreter's recursion limit) where `json.dumps` raises ValueError. Where the interpreter has no C
encoder, the standard one is used.
"""

from __future__ import annotations

import json
from json import encoder
from typing import Any

# `json.JSONEncoder.encode` builds a C encoder on every call, with a marker dict to catch circular references; built
# once, without the markers, the same encoder writes a tools/call answer in about two thirds of the instructions
# (docs/benchmarks.md, "Where a warm tools/call's instructions go").
_STANDARD = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_make = getattr(encoder, "c_make_encoder", None)
_ONCE = (
    None
    if _make is None
    # markers, default, string encoder, indent, key separator, item separator, sort_keys, skipkeys, allow_nan
    else _make(None, _STANDARD.default, encoder.encode_basestring, None, ":", ",", False, False, True)
)


def compact(value: Any) -> str:
    """`value` as compact JSON text; TypeError for a value JSON cannot hold."""
    if _ONCE is None:
        return _STANDARD.encode(value)
    return "".join(_ONCE(value, 0))
