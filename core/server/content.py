"""Content blocks a tool, resource or prompt returns, and their wire form.

They are `NamedTuple`s: immutable values.
"""

# NamedTuples, not dataclasses: they cost a fraction of a dataclass to define at cold start (docs/benchmarks.md).

import base64
from collections.abc import Sequence
from typing import Any, NamedTuple

from stratus.types import JsonObject


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


class Text(NamedTuple):
    """Plain text content."""

    text: str

    def to_wire(self) -> JsonObject:
        return {"type": "text", "text": self.text}


class Image(NamedTuple):
    """Image content; `data` is raw bytes or an already base64-encoded string."""

    data: bytes | str
    mime_type: str

    def to_wire(self) -> JsonObject:
        return {"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}


class Audio(NamedTuple):
    """Audio content; `data` is raw bytes or an already base64-encoded string."""

    data: bytes | str
    mime_type: str

    def to_wire(self) -> JsonObject:
        return {"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}


class TextResource(NamedTuple):
    """The text contents of a resource."""

    uri: str
    text: str
    mime_type: str | None = None

    def to_wire(self) -> JsonObject:
        wire: JsonObject = {"uri": self.uri, "text": self.text}
        if self.mime_type:
            wire["mimeType"] = self.mime_type
        return wire


class BlobResource(NamedTuple):
    """The binary contents of a resource; `blob` is raw bytes or an already base64-encoded string."""

    uri: str
    blob: bytes | str
    mime_type: str | None = None

    def to_wire(self) -> JsonObject:
        wire: JsonObject = {"uri": self.uri, "blob": _b64(self.blob)}
        if self.mime_type:
            wire["mimeType"] = self.mime_type
        return wire


class EmbeddedResource(NamedTuple):
    """A resource's contents embedded in a tool result or prompt message."""

    resource: TextResource | BlobResource

    def to_wire(self) -> JsonObject:
        return {"type": "resource", "resource": self.resource.to_wire()}


class ResourceLink(NamedTuple):
    """A link to a resource the client may read."""

    uri: str
    name: str
    mime_type: str | None = None
    description: str | None = None

    def to_wire(self) -> JsonObject:
        wire: JsonObject = {"type": "resource_link", "uri": self.uri, "name": self.name}
        if self.mime_type:
            wire["mimeType"] = self.mime_type
        if self.description:
            wire["description"] = self.description
        return wire


Content = Text | Image | Audio | EmbeddedResource | ResourceLink
CONTENT_TYPES = (Text, Image, Audio, EmbeddedResource, ResourceLink)


class ToolResult(NamedTuple):
    """A tool result spelled out in full, for tools that set `isError` or structured content themselves."""

    content: Sequence[Content] = ()
    structured: Any = None
    is_error: bool = False

    def to_wire(self) -> JsonObject:
        wire: JsonObject = {"content": [block.to_wire() for block in self.content]}
        if self.structured is not None:
            wire["structuredContent"] = self.structured
        if self.is_error:
            wire["isError"] = True
        return wire


def to_content_block(value: Any) -> JsonObject:
    """One content block for a value a handler returned."""
    if isinstance(value, CONTENT_TYPES):
        return value.to_wire()
    if isinstance(value, str):
        return {"type": "text", "text": value}
    from pydantic_core import to_json  # any other value: pydantic's encoder knows models, dates, enums ...

    return {"type": "text", "text": to_json(value).decode()}


def is_sequence(value: Any) -> bool:
    """A list or plain tuple of items; content blocks are themselves (named) tuples, so they never count."""
    return isinstance(value, list) or type(value) is tuple


def to_content_list(value: Any) -> list[JsonObject]:
    """The `content` list for a handler's return value."""
    if value is None:
        return []
    if is_sequence(value):
        return [to_content_block(item) for item in value]
    return [to_content_block(value)]
