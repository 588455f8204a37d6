"""Resources: static ones by URI, and RFC 6570 URI templates matched against a requested URI."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from stratus.server.content import BlobResource, TextResource, is_sequence
from stratus.server.context import Context
from stratus.server.policy import Access
from stratus.server.signature import RegistrationError, Signature, where
from stratus.types import JsonObject

# Level-1 simple expansion {var} and level-2 reserved expansion {+var}: what resource templates use in practice.
_EXPRESSION = re.compile(r"\{(\+?)([A-Za-z0-9_]+)\}")


class ResourceNotFoundError(Exception):
    """No resource or template answers this URI."""


def compile_template(template: str) -> tuple[re.Pattern[str], list[str]]:
    """A regular expression matching URIs the template expands to, and its variable names.

    Raises:
        ValueError: the template uses an RFC 6570 operator this server does not support.
    """
    pattern, names, position = "", [], 0
    literals: list[str] = []
    for match in _EXPRESSION.finditer(template):
        literals.append(template[position : match.start()])
        pattern += re.escape(literals[-1])
        reserved, name = match.groups()
        pattern += f"(?P<{name}>.+?)" if reserved else f"(?P<{name}>[^/?#]+?)"
        names.append(name)
        position = match.end()
    literals.append(template[position:])
    if any("{" in literal or "}" in literal for literal in literals):
        raise ValueError(f"unsupported URI template expression in {template!r}: use {{name}} or {{+name}}")
    pattern += re.escape(literals[-1])
    return re.compile(f"^{pattern}$"), names


class _Readable:
    """Shared by resources and templates: the handler and how its return value becomes `contents`."""

    def __init__(self, fn: Callable[..., Any], *, name: str, mime_type: str | None) -> None:
        self.fn = fn
        self.name = name
        self.mime_type = mime_type
        self.signature = Signature(fn, model_name=f"{name}_variables", owner=f"resource {name!r}")
        self.access = Access()

    async def _run(self, kwargs: dict[str, Any], context: Context) -> Any:
        return await self.signature.call(kwargs, context)

    def _definition(
        self,
        wire: JsonObject,
        title: str | None,
        description: str | None,
        *,
        size: int | None = None,
        icons: list[JsonObject] | None,
        annotations: JsonObject | None,
    ) -> JsonObject:
        """`wire` (the URI or template, and the name) with the fields given, in the order they are listed."""
        for key, value in (
            ("title", title),
            ("description", description or self.signature.docstring.summary),
            ("mimeType", self.mime_type),
            ("size", size),
            ("icons", icons),
            ("annotations", annotations),
        ):
            if value is not None:
                wire[key] = value
        return wire

    def _contents(self, uri: str, value: Any) -> list[JsonObject]:
        items = value if is_sequence(value) else [value]
        contents: list[JsonObject] = []
        for item in items:
            if isinstance(item, TextResource | BlobResource):
                contents.append(item.to_wire())
            elif isinstance(item, bytes):
                contents.append(BlobResource(uri, item, self.mime_type or "application/octet-stream").to_wire())
            else:
                contents.append(TextResource(uri, str(item), self.mime_type or "text/plain").to_wire())
        return contents


class Resource(_Readable):
    """A resource with a fixed URI."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        uri: str,
        name: str,
        title: str | None,
        description: str | None,
        mime_type: str | None,
        size: int | None = None,
        icons: list[JsonObject] | None = None,
        annotations: JsonObject | None = None,
    ) -> None:
        super().__init__(fn, name=name, mime_type=mime_type)
        if self.signature.parameters:
            raise RegistrationError(
                f"resource {uri!r} has a fixed URI, so its handler takes no arguments: put a {{variable}} in the URI "
                f"for each parameter to make it a template, or drop the parameters{where(fn)}"
            )
        self.uri = uri
        self.definition = self._definition(
            {"uri": uri, "name": name}, title, description, size=size, icons=icons, annotations=annotations
        )

    async def read(self, context: Context) -> list[JsonObject]:
        return self._contents(self.uri, await self._run({}, context))


class ResourceTemplate(_Readable):
    """A family of resources named by an RFC 6570 URI template."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        uri_template: str,
        name: str,
        title: str | None,
        description: str | None,
        mime_type: str | None,
        icons: list[JsonObject] | None = None,
        annotations: JsonObject | None = None,
    ) -> None:
        super().__init__(fn, name=name, mime_type=mime_type)
        self.uri_template = uri_template
        self.pattern, self.variables = compile_template(uri_template)
        declared = {parameter.name for parameter in self.signature.parameters}
        if declared != set(self.variables):
            raise RegistrationError(
                f"resource template {uri_template!r} has the variables {sorted(self.variables)} but its handler "
                f"takes {sorted(declared)}: name each parameter after a variable of the URI{where(fn)}"
            )
        self.definition = self._definition(
            {"uriTemplate": uri_template, "name": name}, title, description, icons=icons, annotations=annotations
        )

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables for `uri`, or None when the template does not produce it."""
        found = self.pattern.match(uri)
        if found is None:
            return None
        return {name: unquote(value) for name, value in found.groupdict().items()}

    async def read(self, uri: str, variables: dict[str, str], context: Context) -> list[JsonObject]:
        """Read one expansion of the template.

        Raises:
            ArgumentsError: a variable does not convert to the handler's annotated type.
        """
        kwargs = self.signature.validate(dict(variables))
        return self._contents(uri, await self._run(kwargs, context))
