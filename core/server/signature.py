"""Read a handler's signature once: its arguments model, its context parameter and its docstring."""

import enum
import inspect
import re
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, get_args, get_origin

from stratus.server import scalar_params
from stratus.server.context import Context

if TYPE_CHECKING:
    from pydantic import BaseModel

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\*{0,2}\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


class Docstring(NamedTuple):
    """The summary and per-argument descriptions of a Google-style docstring."""

    summary: str | None
    arguments: dict[str, str]


def parse_docstring(doc: str | None) -> Docstring:
    """Split a docstring into its description (everything before `Args:`) and its argument lines."""
    if not doc:
        return Docstring(None, {})
    summary: list[str] = []
    arguments: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    arg_indent: int | None = None
    for line in inspect.cleandoc(doc).splitlines():
        if section == "summary":
            if _ARGS_HEADER.match(line):
                section = "args"
            else:
                summary.append(line)
            continue
        if section != "args" or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            section = "other"
            continue
        if arg_indent is None:
            arg_indent = indent
        match = _ARG_LINE.match(line)
        if indent == arg_indent and match:
            current = match.group(1).lstrip("*")
            arguments[current] = match.group(2).strip()
        elif current is not None:
            arguments[current] = f"{arguments[current]} {line.strip()}".strip()
    text = "\n".join(summary).strip()
    return Docstring(text or None, arguments)


class Parameter(NamedTuple):
    """One argument the client supplies."""

    name: str
    annotation: Any
    required: bool
    description: str | None
    default: Any = None


class ArgumentsError(Exception):
    """Arguments failed validation; `problems` names each field and what is wrong with it."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class RegistrationError(TypeError):
    """A handler cannot be registered as it is declared: raised by the decorator, at import, with a message naming
    the handler, what is wrong and what to change (`stratus serve` and the Lambda functions print it as one line)."""


def where(fn: Callable[..., Any]) -> str:
    """`file:line` of a function's definition, for a registration error ('' when it has no code object)."""
    code = getattr(fn, "__code__", None)
    return f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""


class ToolSignatureError(RegistrationError):
    """A tool's parameter has a type that cannot be described to a client as JSON (a plain class, a callable):
    raised when the tool is registered, naming the tool and the parameter."""

    def __init__(self, tool: str, parameter: str, annotation: Any, reason: str) -> None:
        super().__init__(
            f"tool {tool!r}: parameter {parameter!r} has type {annotation!r}, which cannot be described as JSON "
            f"Schema ({reason}); use a JSON type, a pydantic model, a dataclass or a TypedDict"
        )
        self.tool = tool
        self.parameter = parameter


class ToolReturnTypeError(ToolSignatureError):
    """A structured tool's return type cannot be described as JSON (`-> socket.socket`): raised when the tool is
    registered, naming the tool and the type, instead of failing every `tools/list`."""

    def __init__(self, tool: str, annotation: Any, reason: str) -> None:
        TypeError.__init__(
            self,
            f"tool {tool!r}: return type {_type_name(annotation)} cannot be described as JSON Schema ({reason}); "
            "return a JSON type, a pydantic model, a dataclass or a TypedDict, or register it with "
            "structured_output=False",
        )
        self.tool = tool
        self.parameter = "return"


def _refuse_unawaited_context_calls(fn: Callable[..., Any], parameter: str, owner: str | None) -> None:
    from stratus.server.sync_handlers import unawaited_context_calls

    calls = unawaited_context_calls(fn, parameter)
    if calls:
        method, line = calls[0]
        raise RegistrationError(
            f"{owner or fn.__qualname__}: a plain `def` cannot await {parameter}.{method}() (line {line}): the call "
            f"makes a coroutine that never runs, and the client gets nothing. Declare the handler `async def` and "
            f"write `await {parameter}.{method}(...)`{where(fn)}"
        )


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return f"{annotation.__module__}.{annotation.__qualname__}".removeprefix("builtins.")
    return repr(annotation)


class Signature:
    """What a handler takes: client-supplied parameters and, optionally, the execution context."""

    def __init__(self, fn: Callable[..., Any], *, model_name: str, owner: str | None = None) -> None:
        """Read `fn`'s signature; `owner` names the handler in errors (`tool 'add'`).

        Raises:
            RegistrationError: a `*args` or `**kwargs` parameter, which no client can be told about.
        """
        self._fn = fn
        self._model_name = model_name
        self.docstring = parse_docstring(fn.__doc__)
        self.context_parameter: str | None = None
        self.parameters: list[Parameter] = []
        self._model: type[BaseModel] | None = None
        hints = typing.get_type_hints(fn, include_extras=True)
        for name, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                stars = "*" if param.kind == param.VAR_POSITIONAL else "**"
                raise RegistrationError(
                    f"{owner or fn.__qualname__}: parameter {stars}{name} cannot be described to a client: declare "
                    f"each argument by name (a list or dict parameter takes many values){where(fn)}"
                )
            annotation = hints.get(name, Any)
            if annotation is Context:
                self.context_parameter = name
                continue
            required = param.default is inspect.Parameter.empty
            self.parameters.append(
                Parameter(
                    name, annotation, required, self.docstring.arguments.get(name), None if required else param.default
                )
            )
        self.return_annotation: Any = hints.get("return", inspect.Signature.empty)
        self.is_async = inspect.iscoroutinefunction(fn)
        if self.context_parameter and not self.is_async:
            _refuse_unawaited_context_calls(fn, self.context_parameter, owner)
        self.plain = all(
            scalar_params.is_plain(parameter.annotation, parameter.default, not parameter.required)
            for parameter in self.parameters
        )
        """Whether every parameter is a plain JSON scalar: then checking and describing them needs no pydantic."""

    async def call(self, kwargs: dict[str, Any], context: Context) -> Any:
        """The function's value for checked `kwargs`, the context added when it takes one; whatever it raises
        propagates."""
        if self.context_parameter:
            kwargs = {**kwargs, self.context_parameter: context}
        return await self._fn(**kwargs) if self.is_async else self._fn(**kwargs)

    @property
    def model(self) -> "type[BaseModel]":
        """The pydantic model of the client-supplied arguments, built on first use (cold start pays nothing)."""
        if self._model is None:
            from pydantic import ConfigDict, create_model
            from pydantic.fields import FieldInfo

            fields: dict[str, Any] = {}
            for parameter in self.parameters:
                default = ... if parameter.required else parameter.default
                info = FieldInfo.from_annotated_attribute(parameter.annotation, default)
                if parameter.description and not info.description:
                    info.description = parameter.description
                fields[parameter.name] = (info.annotation, info)
            self._model = create_model(
                self._model_name, __config__=ConfigDict(extra="ignore", arbitrary_types_allowed=False), **fields
            )
        return self._model

    def check(self, tool: str) -> None:
        """Build the arguments' model and schema now, unless every parameter is plain (which needs no pydantic):
        a parameter pydantic cannot describe fails the tool's registration rather than every `tools/list`.

        Raises:
            ToolSignatureError: naming the tool and the first parameter that cannot be described.
        """
        if self.plain:
            return
        try:
            self.json_schema()
            return
        except Exception as error:  # noqa: BLE001 - pydantic raises several kinds; the parameter is found below
            whole = error
        from pydantic import TypeAdapter

        for parameter in self.parameters:
            if scalar_params.is_plain(parameter.annotation, parameter.default, not parameter.required):
                continue
            try:
                TypeAdapter(parameter.annotation).json_schema()
            except Exception as error:
                raise ToolSignatureError(tool, parameter.name, parameter.annotation, type(error).__name__) from error
        raise ToolSignatureError(tool, "(arguments)", None, str(whole)) from whole

    def schema_extras(self, key: str) -> dict[str, Any]:
        """Parameters whose `json_schema_extra` sets `key`, with its value (e.g. `x-mcp-header`)."""
        if self.plain:
            return {}  # plain parameters carry no schema extras
        found: dict[str, Any] = {}
        for name, info in self.model.model_fields.items():
            extra = info.json_schema_extra
            if isinstance(extra, dict) and key in extra:
                found[name] = extra[key]
        return found

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, as a tool's `inputSchema`."""
        if self.plain:
            return self._plain_schema()
        schema = self.model.model_json_schema()
        schema.pop("title", None)
        schema.setdefault("properties", {})
        schema["type"] = "object"
        return schema

    def _plain_schema(self) -> dict[str, Any]:
        properties = {
            parameter.name: scalar_params.property_schema(
                parameter.name,
                parameter.annotation,
                default=parameter.default,
                has_default=not parameter.required,
                description=parameter.description,
            )
            for parameter in self.parameters
        }
        schema: dict[str, Any] = {"properties": properties}
        required = [parameter.name for parameter in self.parameters if parameter.required]
        if required:
            schema["required"] = required
        schema["type"] = "object"
        return schema

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validated keyword arguments for the handler.

        Raises:
            ArgumentsError: a field is missing or has the wrong type.
        """
        if self.plain:
            kwargs = self._plain_arguments(arguments)
            if kwargs is not None:
                return kwargs
        from pydantic import ValidationError

        try:
            instance = self.model.model_validate(arguments)
        except ValidationError as exc:
            problems = []
            for error in exc.errors(include_url=False, include_input=False):
                where = ".".join(str(part) for part in error["loc"]) or "arguments"
                problems.append(f"{where}: {error['msg']}")
            raise ArgumentsError(problems) from None
        return {parameter.name: getattr(instance, parameter.name) for parameter in self.parameters}

    def _plain_arguments(self, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The arguments when each is exactly of its plain type (or absent with a default); None sends them to
        pydantic, which converts what it can and explains the rest."""
        kwargs: dict[str, Any] = {}
        for parameter in self.parameters:
            if parameter.name not in arguments:
                if parameter.required:
                    return None
                kwargs[parameter.name] = parameter.default
                continue
            ok, value = scalar_params.accept(parameter.annotation, arguments[parameter.name])
            if not ok:
                return None
            kwargs[parameter.name] = value
        return kwargs


def enum_values(annotation: Any) -> list[str] | None:
    """The string values an Enum or Literal annotation allows, for completion by prefix."""
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return enum_values(get_args(annotation)[0])
    if origin is typing.Literal:
        return [str(value) for value in get_args(annotation)]
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    return None
