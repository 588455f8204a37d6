"""`McpServer`: the decorator API and the registry of tools, resources, prompts and completions."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.server.policy import (
    Access,
    Authenticator,
    Guard,
    Middleware,
    RateLimits,
    RetryPolicy,
    ServerPolicy,
    ToolPolicy,
)
from stratus.server.prompts import Prompt
from stratus.server.resources import Resource, ResourceTemplate
from stratus.server.signature import RegistrationError, enum_values
from stratus.server.tools import Tool
from stratus.types import JsonObject

if TYPE_CHECKING:
    pass

F = TypeVar("F", bound=Callable[..., Any])
CompletionHandler = Callable[[str, str, dict[str, str]], Iterable[str] | Awaitable[Iterable[str]]]

MAX_COMPLETION_VALUES = 100


class McpServer:
    """An MCP server: what it is called and what it offers.

    Handlers register at import with the decorators; the transport built by `stratus.build_app` serves them.
    """

    dynamic = False
    """Whether what it offers changes while it runs (a gateway, whose `stratus.server.hooks.ServerHooks` refresh it
    before each request)."""

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: list[JsonObject] | None = None,
        page_size: int = 100,
        authenticators: Sequence[Authenticator] = (),
        middleware: Sequence[Middleware] = (),
        rate_limits: RateLimits | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        breaker: BreakerPolicy | None = None,
        deadline_margin: float = 0.5,
        list_changes: bool = True,
    ) -> None:
        """Describe the server and what applies to every call.

        Args:
            name: the server's name in `serverInfo`.
            version: the server's version in `serverInfo`.
            title: a human-readable name.
            instructions: guidance for the model on how to use the server.
            website_url: the server's home page.
            icons: icons a client may display.
            page_size: items per page of the list methods.
            authenticators: global guards, run in order before every call; each may establish the user.
            middleware: `async (ctx, call_next)` layers around every call, outermost first.
            rate_limits: limits per tool, per principal, per session and overall.
            timeout: seconds any call may take (a tool's own timeout may be tighter).
            retry: retry policy for the idempotent tools (annotated `idempotentHint`) that raise retryable errors.
            breaker: circuit breaker applied to every tool (a tool's own policy wins).
            deadline_margin: seconds kept back from Lambda's remaining time, so a timeout answers first.
            list_changes: whether the lists of tools, resources and prompts may change while it runs (a handler
                calling `ctx.notify_list_changed`). False declares them fixed: no `listChanged` is advertised, and
                with no resources to subscribe to either, a handshake-era client's GET stream is answered 405, so
                it never polls for notifications that cannot come.
        """
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.website_url = website_url
        self.icons = icons
        self.page_size = page_size
        self.list_changes = list_changes
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        self.completions: dict[tuple[str, str], CompletionHandler] = {}
        self.policy = ServerPolicy(
            authenticators=tuple(authenticators),
            middleware=tuple(middleware),
            rate_limits=rate_limits or RateLimits(),
            timeout=timeout,
            retry=retry,
            breaker=breaker,
            deadline_margin=deadline_margin,
        )

    @property
    def info(self) -> JsonObject:
        """The `Implementation` object naming this server."""
        info: JsonObject = {"name": self.name, "version": self.version}
        for key, value in (("title", self.title), ("websiteUrl", self.website_url), ("icons", self.icons)):
            if value is not None:
                info[key] = value
        return info

    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: JsonObject | None = None,
        icons: list[JsonObject] | None = None,
        meta: JsonObject | None = None,
        structured_output: bool | None = None,
        public: bool = False,
        scopes: Sequence[str] = (),
        roles: Sequence[str] = (),
        guards: Sequence[Guard] = (),
        rate_limit: RateLimit | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        breaker: BreakerPolicy | None = None,
        middleware: Sequence[Middleware] = (),
        task: str | None = None,
        input_schema: JsonObject | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        name: str | F | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: JsonObject | None = None,
        icons: list[JsonObject] | None = None,
        meta: JsonObject | None = None,
        structured_output: bool | None = None,
        public: bool = False,
        scopes: Sequence[str] = (),
        roles: Sequence[str] = (),
        guards: Sequence[Guard] = (),
        rate_limit: RateLimit | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        breaker: BreakerPolicy | None = None,
        middleware: Sequence[Middleware] = (),
        task: str | None = None,
        input_schema: JsonObject | None = None,
    ) -> Callable[[F], F] | F:
        """Register a function as a tool; its input schema comes from the type hints, unless given. `@server.tool`
        without parentheses registers it with the defaults.

        Args:
            name: the tool's name (default: the function's name).
            title: a human-readable name.
            description: what the tool does (default: the docstring's summary).
            annotations: MCP tool annotations, e.g. `{"readOnlyHint": True}`.
            icons: icons a client may display.
            meta: the tool's `_meta`.
            structured_output: force (or suppress) an `outputSchema` from the return annotation.
            public: skip every authorization check.
            scopes: token scopes the caller must all have.
            roles: roles of which the caller must have at least one.
            guards: `async (ctx) -> bool` checks that must all pass.
            rate_limit: this tool's own limit (shared by all callers).
            timeout: seconds this tool may take.
            retry: this tool's retry policy, honoured as declared (also for a tool not annotated idempotent).
            breaker: this tool's circuit breaker.
            middleware: layers around this tool only, inside the server's middleware.
            task: `"optional"` or `"required"` to let (or make) clients run calls as tasks, answered at once
                with a handle and polled for the result; None (the default) never runs it as a task.
            input_schema: the `inputSchema` to list, served verbatim (`$schema`, `$defs`, `$anchor`, `allOf`,
                `if`/`then`/`else`... as given); arguments are still checked against the function's signature.
        """
        if input_schema is not None and input_schema.get("type") != "object":
            raise ValueError("an inputSchema must have type 'object' at its root")
        named = name if isinstance(name, str) else None
        policy = ToolPolicy(
            access=Access(public=public, scopes=tuple(scopes), roles=tuple(roles), guards=tuple(guards)),
            rate_limit=rate_limit,
            timeout=timeout,
            retry=retry,
            breaker=breaker,
            middleware=tuple(middleware),
        )

        def register(fn: F) -> F:
            tool = Tool(
                fn,
                policy=policy,
                name=named or fn.__name__,
                title=title,
                description=description,
                annotations=annotations,
                icons=icons,
                meta=meta,
                structured_output=structured_output,
                task_support=task,
                input_schema=input_schema,
            )
            _add(self.tools, tool.name, tool, "tool")
            return fn

        if callable(name):  # the bare `@server.tool`
            return register(name)
        return register

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        icons: list[JsonObject] | None = None,
        annotations: JsonObject | None = None,
        scopes: Sequence[str] = (),
        roles: Sequence[str] = (),
        guards: Sequence[Guard] = (),
    ) -> Callable[[F], F]:
        """Register a resource; a URI with `{variables}` registers an RFC 6570 template instead.

        The handler returns `str` (text), `bytes` (blob), `TextResource` / `BlobResource`, or a list of them.
        `scopes`, `roles` and `guards` restrict who may read it, as for tools.
        """
        if not isinstance(uri, str):  # the bare `@server.resource` passes the function as the URI
            raise RegistrationError(
                f'@server.resource needs the resource\'s URI: write @server.resource("scheme://...") above '
                f"{getattr(uri, '__qualname__', uri)!r}"
            )
        access = Access(scopes=tuple(scopes), roles=tuple(roles), guards=tuple(guards))

        def register(fn: F) -> F:
            resource_name = name or fn.__name__
            if "{" in uri:
                template = ResourceTemplate(
                    fn,
                    uri_template=uri,
                    name=resource_name,
                    title=title,
                    description=description,
                    mime_type=mime_type,
                    icons=icons,
                    annotations=annotations,
                )
                template.access = access
                _add(self.templates, uri, template, "resource template")
            else:
                resource = Resource(
                    fn,
                    uri=uri,
                    name=resource_name,
                    title=title,
                    description=description,
                    mime_type=mime_type,
                    size=size,
                    icons=icons,
                    annotations=annotations,
                )
                resource.access = access
                _add(self.resources, uri, resource, "resource")
            return fn

        return register

    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[JsonObject] | None = None,
        scopes: Sequence[str] = (),
        roles: Sequence[str] = (),
        guards: Sequence[Guard] = (),
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        name: str | F | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[JsonObject] | None = None,
        scopes: Sequence[str] = (),
        roles: Sequence[str] = (),
        guards: Sequence[Guard] = (),
    ) -> Callable[[F], F] | F:
        """Register a prompt; its arguments are the function's parameters. `scopes`, `roles`, `guards` as for tools.
        `@server.prompt` without parentheses registers it with the defaults."""
        access = Access(scopes=tuple(scopes), roles=tuple(roles), guards=tuple(guards))
        named = name if isinstance(name, str) else None

        def register(fn: F) -> F:
            prompt = Prompt(fn, name=named or fn.__name__, title=title, description=description, icons=icons)
            prompt.access = access
            _add(self.prompts, prompt.name, prompt, "prompt")
            return fn

        if callable(name):  # the bare `@server.prompt`
            return register(name)
        return register

    def completion(self, *, prompt: str | None = None, template: str | None = None) -> Callable[[F], F]:
        """Register `fn(argument, value, context_arguments) -> values` completing a prompt's or template's arguments.

        Without one, arguments annotated with an Enum or Literal are completed by prefix.
        """
        if (prompt is None) == (template is None):
            raise ValueError("completion() takes exactly one of prompt= or template=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", template or "")

        def register(fn: F) -> F:
            _add(self.completions, key, fn, "completion handler")
            return fn

        return register

    async def complete(
        self, ref_type: str, ref_name: str, argument: str, value: str, context: dict[str, str]
    ) -> JsonObject:
        """The `completion` object for one argument: at most 100 values, with `total` and `hasMore`."""
        handler = self.completions.get((ref_type, ref_name))
        if handler is not None:
            produced = handler(argument, value, context)
            values = list(await produced if inspect.isawaitable(produced) else produced)
        else:
            values = [option for option in self._enum_options(ref_type, ref_name, argument) if option.startswith(value)]
        return {
            "values": values[:MAX_COMPLETION_VALUES],
            "total": len(values),
            "hasMore": len(values) > MAX_COMPLETION_VALUES,
        }

    def _enum_options(self, ref_type: str, ref_name: str, argument: str) -> list[str]:
        owner = self.prompts.get(ref_name) if ref_type == "ref/prompt" else self.templates.get(ref_name)
        if owner is None:
            return []
        for parameter in owner.signature.parameters:
            if parameter.name == argument:
                return enum_values(parameter.annotation) or []
        return []


class DuplicateError(RegistrationError, ValueError):
    """Two handlers registered under one name (or URI)."""


def _add(registry: dict[Any, Any], key: Any, item: Any, kind: str) -> None:
    if key in registry:
        fix = "register each URI once" if kind.startswith("resource") else "pass another name= to one of them"
        raise DuplicateError(f"duplicate {kind} {key!r}: {fix}")
    registry[key] = item
