"""Content blocks a tool, resource or prompt returns, and their wire form."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import to_json

JsonObject = dict[str, Any]


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


@dataclass(frozen=True, slots=True)
class Text:
    """Plain text content."""

    text: str

    def to_wire(self) -> JsonObject:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class Image:
    """Image content; `data` is raw bytes or an already base64-encoded string."""

    data: bytes | str
    mime_type: str

    def to_wire(self) -> JsonObject:
        return {"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}


@dataclass(frozen=True, slots=True)
class Audio:
    """Audio content; `data` is raw bytes or an already base64-encoded string."""

    data: bytes | str
    mime_type: str

    def to_wire(self) -> JsonObject:
        return {"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}


@dataclass(frozen=True, slots=True)
class TextResource:
    """The text contents of a resource."""

    uri: str
    text: str
    mime_type: str | None = None

    def to_wire(self) -> JsonObject:
        wire: JsonObject = {"uri": self.uri, "text": self.text}
        if self.mime_type:
            wire["mimeType"] = self.mime_type
        return wire


@dataclass(frozen=True, slots=True)
class BlobResource:
    """The binary contents of a resource; `blob` is raw bytes or an already base64-encoded string."""

    uri: str
    blob: bytes | str
    mime_type: str | None = None

    def to_wire(self) -> JsonObject:
        wire: JsonObject = {"uri": self.uri, "blob": _b64(self.blob)}
        if self.mime_type:
            wire["mimeType"] = self.mime_type
        return wire


@dataclass(frozen=True, slots=True)
class EmbeddedResource:
    """A resource's contents embedded in a tool result or prompt message."""

    resource: TextResource | BlobResource

    def to_wire(self) -> JsonObject:
        return {"type": "resource", "resource": self.resource.to_wire()}


@dataclass(frozen=True, slots=True)
class ResourceLink:
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


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool result spelled out in full, for tools that set `isError` or structured content themselves."""

    content: list[Content] = field(default_factory=list)
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
    return {"type": "text", "text": to_json(value).decode()}


def to_content_list(value: Any) -> list[JsonObject]:
    """The `content` list for a handler's return value."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [to_content_block(item) for item in value]
    return [to_content_block(value)]
