"""Prompts: a decorated function whose arguments the client fills in and whose messages it gets back."""

from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from stratus.server.content import CONTENT_TYPES, Content, is_sequence, to_content_block
from stratus.server.context import Context
from stratus.server.policy import Access
from stratus.server.signature import Signature
from stratus.types import JsonObject


class Message(NamedTuple):
    """One message of a prompt."""

    role: Literal["user", "assistant"]
    content: Content | str

    def to_wire(self) -> JsonObject:
        return {"role": self.role, "content": to_content_block(self.content)}


def user(content: Content | str) -> Message:
    """A message from the user."""
    return Message("user", content)


def assistant(content: Content | str) -> Message:
    """A message from the assistant."""
    return Message("assistant", content)


class Prompt:
    """A registered prompt."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        title: str | None,
        description: str | None,
        icons: list[JsonObject] | None,
    ) -> None:
        self.fn = fn
        self.name = name
        self.signature = Signature(fn, model_name=f"{name}_arguments", owner=f"prompt {name!r}")
        self.access = Access()
        self.description = description or self.signature.docstring.summary or ""
        wire: JsonObject = {"name": name}
        if title:
            wire["title"] = title
        if self.description:
            wire["description"] = self.description
        arguments = []
        for parameter in self.signature.parameters:
            argument: JsonObject = {"name": parameter.name, "required": parameter.required}
            if parameter.description:
                argument["description"] = parameter.description
            arguments.append(argument)
        if arguments:
            wire["arguments"] = arguments
        if icons:
            wire["icons"] = icons
        self.definition = wire

    async def get(self, arguments: dict[str, Any], context: Context) -> JsonObject:
        """Render the prompt into a `GetPromptResult`.

        Raises:
            ArgumentsError: a required argument is missing or a value does not convert.
        """
        kwargs = self.signature.validate(arguments)
        value = await self.signature.call(kwargs, context)
        items = value if is_sequence(value) else [value]
        messages = []
        for item in items:
            if isinstance(item, Message):
                messages.append(item.to_wire())
            elif isinstance(item, (str, *CONTENT_TYPES)):
                messages.append(user(item).to_wire())
            else:
                raise TypeError(f"prompt {self.name!r} returned {type(item).__name__}, not a message or content")
        result: JsonObject = {"messages": messages}
        if self.description:
            result["description"] = self.description
        return result
