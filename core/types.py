"""The shapes every layer names: JSON objects as the wire carries them, ASGI's callables, a notification sink."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

JsonObject = dict[str, Any]
"""A JSON object as `json.loads` gives it: what JSON-RPC params, results and MCP definitions are."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

Publish = Callable[[str, JsonObject], Awaitable[None]]
"""Sends a server-wide notification (method, params) to every stream that follows the notification log."""
