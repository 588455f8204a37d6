"""Tools: a decorated function, its wire definition and how a call turns into a result."""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import inspect
import logging
import secrets
import sys
import types
import typing
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, get_args, get_origin

from stratus.json_text import compact
from stratus.server import scalar_params
from stratus.server.content import CONTENT_TYPES, ToolResult, to_content_list
from stratus.server.context import Context
from stratus.server.policy import ToolPolicy
from stratus.server.signature import Signature, ToolReturnTypeError
from stratus.types import JsonObject

if TYPE_CHECKING:
    from pydantic import TypeAdapter

logger = logging.getLogger("stratus.tool")


class ToolError(Exception):
    """Raise inside a tool to fail the call with this message shown to the client (an `isError` result).

    `retryable=True` marks a transient failure: an idempotent tool with a retry policy is tried again, and the
    failure counts towards its circuit breaker.
    """

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


def _is_content(annotation: Any) -> bool:
    if annotation in CONTENT_TYPES:
        return True
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return all(_is_content(arg) for arg in get_args(annotation))
    return False


def _is_unstructured(annotation: Any) -> bool:
    """Return types whose values are content for the model, not data with a schema."""
    if annotation in (inspect.Signature.empty, None, type(None), Any, str, ToolResult) or _is_content(annotation):
        return True
    if get_origin(annotation) in (list, tuple, typing.Sequence):
        args = [arg for arg in get_args(annotation) if arg is not Ellipsis]
        return bool(args) and all(_is_content(arg) for arg in args)
    return False


def _is_object_type(annotation: Any) -> bool:
    """Whether values of this type serialize to JSON objects (else structured output is wrapped under `result`)."""
    origin = get_origin(annotation) or annotation
    if origin in (dict, typing.Mapping, collections.abc.Mapping):
        return True
    if not inspect.isclass(annotation):
        return False
    # A pydantic model class exists only once pydantic is imported: no need to import it to ask.
    base_model = getattr(sys.modules.get("pydantic"), "BaseModel", None)
    is_model = base_model is not None and issubclass(annotation, base_model)
    return is_model or dataclasses.is_dataclass(annotation) or typing.is_typeddict(annotation)


def _plainly_json(annotation: Any) -> bool:
    """Whether a return type is JSON scalars (or None) nested in lists, tuples, str-keyed dicts and unions: pydantic
    can surely describe it, so registration need not import pydantic to ask (cold start)."""
    if annotation in scalar_params.JSON_TYPES or annotation in (None, type(None)):
        return True
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (list, tuple, typing.Union, types.UnionType) and args:
        return all(arg is Ellipsis or _plainly_json(arg) for arg in args)
    if origin is dict and len(args) == 2:  # dict[key, value]
        return args[0] is str and _plainly_json(args[1])
    return False


class Tool:
    """A registered tool."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        title: str | None,
        description: str | None,
        annotations: JsonObject | None,
        icons: list[JsonObject] | None,
        meta: JsonObject | None,
        structured_output: bool | None,
        policy: ToolPolicy | None = None,
        task_support: str | None = None,
        input_schema: JsonObject | None = None,
    ) -> None:
        if task_support not in (None, "optional", "required"):
            raise ValueError(f"tool {name!r}: task must be 'optional', 'required' or None, got {task_support!r}")
        self.fn = fn
        self.policy = policy or ToolPolicy()
        self.task_support = task_support
        """Whether a call may (`optional`) or must (`required`) run as a task; None: never."""
        self.name = name
        self.signature = Signature(fn, model_name=f"{name}_arguments", owner=f"tool {name!r}")
        if input_schema is None:
            self.signature.check(name)  # plain parameters: nothing built, cold start pays nothing
        self.title = title
        self.description = description or self.signature.docstring.summary or ""
        self.annotations = annotations
        self.icons = icons
        self.meta = meta
        returns = self.signature.return_annotation
        self._structured = not _is_unstructured(returns) if structured_output is None else structured_output
        self._return_annotation = Any if returns is inspect.Signature.empty else returns
        self._wrapped = not _is_object_type(self._return_annotation)
        self._output_adapter: TypeAdapter[Any] | None = None
        self._plain_return = self._return_annotation in scalar_params.JSON_TYPES
        self._header_parameters: dict[str, str] | None = None
        self._definition: JsonObject | None = None
        self._input_schema = copy.deepcopy(input_schema) if input_schema is not None else None
        """The schema the author gave, listed as it is: never rebuilt, so no keyword is lost."""
        if self._structured and not _plainly_json(self._return_annotation):
            self._check_output_schema()

    def _check_output_schema(self) -> None:
        """Build the `outputSchema` now: a return type pydantic cannot describe fails the registration, naming the
        tool and the type, rather than every `tools/list` (a plain scalar needs no pydantic and is not checked)."""
        try:
            self.output_schema()
        except Exception as error:  # pydantic raises several kinds, all meaning "not describable"
            raise ToolReturnTypeError(self.name, self._return_annotation, type(error).__name__) from error

    def _adapter(self) -> TypeAdapter[Any]:
        if self._output_adapter is None:
            from pydantic import TypeAdapter

            self._output_adapter = TypeAdapter(self._return_annotation)
        return self._output_adapter

    def output_schema(self) -> JsonObject:
        """The `outputSchema`: the return type's schema, wrapped under `result` when it is not an object."""
        if self._plain_return:
            schema: JsonObject = {"type": scalar_params.JSON_TYPES[self._return_annotation]}
        else:
            schema = self._adapter().json_schema(mode="serialization")
        if self._wrapped:
            return {"type": "object", "properties": {"result": schema}, "required": ["result"]}
        schema.pop("title", None)
        return schema

    @property
    def header_parameters(self) -> dict[str, str]:
        """Arguments mirrored into `Mcp-Param-*` headers: argument name -> header name (from `x-mcp-header`)."""
        if self._header_parameters is None:
            if self._input_schema is not None:
                properties = self._input_schema.get("properties")
                self._header_parameters = {
                    name: str(spec["x-mcp-header"])
                    for name, spec in (properties if isinstance(properties, dict) else {}).items()
                    if isinstance(spec, dict) and "x-mcp-header" in spec
                }
            else:
                self._header_parameters = {
                    name: str(value) for name, value in self.signature.schema_extras("x-mcp-header").items()
                }
        return self._header_parameters

    def definition(self) -> JsonObject:
        """The tool as `tools/list` shows it."""
        if self._definition is None:
            wire: JsonObject = {
                "name": self.name,
                "description": self.description,
                "inputSchema": self._input_schema if self._input_schema is not None else self.signature.json_schema(),
            }
            if self.title:
                wire["title"] = self.title
            if self._structured:
                wire["outputSchema"] = self.output_schema()
            if self.annotations:
                wire["annotations"] = self.annotations
            if self.icons:
                wire["icons"] = self.icons
            if self.meta:
                wire["_meta"] = self.meta
            self._definition = wire
        return self._definition

    @property
    def idempotent(self) -> bool:
        """Whether the tool declares `idempotentHint`: only such tools are ever retried."""
        return bool(self.annotations and self.annotations.get("idempotentHint") is True)

    def validate(self, arguments: JsonObject) -> dict[str, Any]:
        """Keyword arguments for the function.

        Raises:
            ArgumentsError: the arguments failed validation (the caller decides how each era reports it).
        """
        return self.signature.validate(arguments)

    def run(self, kwargs: dict[str, Any], context: Context) -> Awaitable[Any]:
        """Call the function with validated arguments; whatever it raises propagates. The signature's own coroutine,
        not one around it: every warm call awaits this."""
        return self.signature.call(kwargs, context)

    def result(self, value: Any) -> JsonObject:
        """The `CallToolResult` for a value the function returned."""
        return self._result(value)

    def failure(self, error: Exception) -> JsonObject:
        """The `isError` result for an exception the function raised: its message for a ToolError, else a reference."""
        if isinstance(error, ToolError):
            logger.info("tool error: %s", error, extra={"tool": self.name})
            return error_result(str(error))
        reference = secrets.token_hex(6)
        logger.error("tool raised", exc_info=error, extra={"tool": self.name, "error_ref": reference})
        return error_result(f"Tool '{self.name}' failed with an internal error (reference {reference})")

    def _result(self, value: Any) -> JsonObject:
        if isinstance(value, ToolResult):
            return value.to_wire()
        if not self._structured:
            return {"content": to_content_list(value)}
        exact, structured = (
            scalar_params.accept(self._return_annotation, value) if self._plain_return else (False, None)
        )
        if not exact:
            checked, structured = self._checked(value)
            if not checked:
                return self._mismatch(value, structured)
        if self._wrapped:
            structured = {"result": structured}
        text = compact(structured)
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured}

    def _checked(self, value: Any) -> tuple[bool, Any]:
        """(True, `value` in JSON form) once the return type's adapter (the one behind `outputSchema`) accepts it,
        else (False, what is wrong): a result that breaks the tool's own schema is never sent."""
        from pydantic import ValidationError

        adapter = self._adapter()
        try:
            return True, adapter.dump_python(adapter.validate_python(value), mode="json", warnings="error")
        except (ValidationError, ValueError) as error:
            return False, _problems(error, "result" if self._wrapped else "")

    def _mismatch(self, value: Any, problems: str) -> JsonObject:
        logger.error(
            "tool returned a value its return type does not allow",
            extra={"tool": self.name, "returned": type(value).__name__, "problems": problems},
        )
        return error_result(
            f"Tool '{self.name}' returned a value that does not match its declared return type "
            f"{_type_label(self._return_annotation)}: {problems}"
        )


def _problems(error: Exception, root: str) -> str:
    """Which field was wrong and what was expected, without the value or Python's exception text."""
    from pydantic import ValidationError

    if not isinstance(error, ValidationError):
        return "it cannot be written as JSON"
    parts = []
    for problem in error.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in (root, *problem["loc"]) if part != "")
        parts.append(f"{where}: {problem['msg']}" if where else str(problem["msg"]))
    return "; ".join(parts)


def _type_label(annotation: Any) -> str:
    return annotation.__name__ if isinstance(annotation, type) else repr(annotation)


def error_result(message: str) -> JsonObject:
    """A `CallToolResult` that reports a failure to the model."""
    return {"content": [{"type": "text", "text": message}], "isError": True}
