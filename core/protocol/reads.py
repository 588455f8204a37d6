"""`resources/read`, `prompts/get` and `completion/complete`: one round through the pipeline each (guards,
authorization, middleware, timeout), with an unexpected exception of user code answered by a reference.

A resource subscription (`resources/subscribe`, a `subscriptions/listen` filter) is held to the checks a read of its
URI would pass before the read itself (`Reads.check_readable`, `Reads.readable`): the URI must name a resource or
match a template, and the caller must pass the server's authenticators and the item's scopes, roles and guards. No
middleware runs and no handler is called: subscribing reads nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from stratus.errors import (
    INVALID_PARAMS,
    ForbiddenError,
    InternalError,
    InvalidParamsError,
    McpError,
    UnauthorizedError,
)
from stratus.pipeline.current import serving
from stratus.pipeline.guards import authenticate, authorize
from stratus.pipeline.pipeline import AuthenticationPlan, Pipeline
from stratus.protocol.call import Call
from stratus.protocol.rounds import InputRounds
from stratus.request.inputs import InputRequired
from stratus.server.context import Context
from stratus.server.policy import Access
from stratus.server.resources import Resource, ResourceTemplate
from stratus.server.server import McpServer
from stratus.server.signature import ArgumentsError
from stratus.types import JsonObject, Publish

T = TypeVar("T")
logger = logging.getLogger("stratus.dispatch")

HANDSHAKE_RESOURCE_NOT_FOUND = -32002


class ResourceNotFoundError(McpError):
    """No resource or template produces the requested URI: -32602 at 2026-07-28, -32002 in the handshake era."""

    def __init__(self, uri: str, *, stateless: bool) -> None:
        super().__init__(f"Resource not found: {uri}", data={"uri": uri})
        self.code = INVALID_PARAMS if stateless else HANDSHAKE_RESOURCE_NOT_FOUND


async def user_code(what: str, step: Awaitable[T]) -> T:
    """Await a handler's work; an unexpected exception becomes a -32603 with a reference, its text only logged."""
    try:
        return await step
    except (McpError, ArgumentsError, InputRequired):
        raise
    except Exception:
        reference = secrets.token_hex(6)
        logger.exception("handler raised", extra={"handler": what, "error_ref": reference})
        raise InternalError(f"{what} failed with an internal error (reference {reference})", http_status=200) from None


class Reads:
    def __init__(
        self, server: McpServer, pipeline: Pipeline, rounds: InputRounds, publish: Publish, auth: AuthenticationPlan
    ) -> None:
        self.server = server
        self.pipeline = pipeline
        self.auth = auth
        """Who authenticates (the pipeline's plan): a subscription's URIs are authorized as a read would be."""
        self.rounds = rounds
        self.publish = publish

    async def resource(self, call: Call) -> JsonObject:
        uri = call.string_param("uri")
        target, variables = self._resource_for(uri)
        if target is None:
            raise ResourceNotFoundError(uri, stateless=call.stateless)

        async def read(context: Context) -> list[JsonObject]:
            if isinstance(target, ResourceTemplate):
                return await user_code(f"Resource '{uri}'", target.read(uri, variables or {}, context))
            return await user_code(f"Resource '{uri}'", target.read(context))

        def answer(contents: list[JsonObject]) -> JsonObject:
            result: JsonObject = {"contents": contents}
            if call.stateless:
                result["ttlMs"] = 0
                result["cacheScope"] = "private"
            return result

        # Named by its template, never by the URI the client chose: the name becomes a metric dimension.
        item = target.uri_template if isinstance(target, ResourceTemplate) else target.uri
        return await self._round(call, item, "resources/read", target.access, read, answer, f"Invalid URI {uri}")

    async def check_readable(self, call: Call, uri: str) -> None:
        """Raise what a `resources/read` of `uri` by this caller would raise before reading.

        Raises:
            ResourceNotFoundError: no resource or template produces `uri`.
            UnauthorizedError: the resource is restricted and the request has no user.
            ForbiddenError: an authenticator, the item's scopes or roles, or one of its guards refused.
        """
        context = call.context(deadline=self.pipeline.deadline_for(call.http, None))
        with serving(context):
            await self._authorize(call, await self._authenticate(context), uri)

    async def readable(self, call: Call, uris: Sequence[str]) -> list[str]:
        """The URIs of `uris` this caller could read, in order: unknown URIs and those its access refuses are left
        out. The server's authenticators run once, for the request, and a refusal of theirs is raised (it refuses
        the request, as it would refuse a read of any of them)."""
        if not uris:
            return []
        context = call.context(deadline=self.pipeline.deadline_for(call.http, None))
        kept = []
        with serving(context):
            authenticated = await self._authenticate(context)
            for uri in uris:
                try:
                    await self._authorize(call, authenticated, uri)
                except (ResourceNotFoundError, UnauthorizedError, ForbiddenError):
                    continue
                kept.append(uri)
        return kept

    async def _authenticate(self, context: Context) -> Context:
        authenticators = self.auth.before_call  # none where the transport ran them for the request
        return await authenticate(context, authenticators) if authenticators else context

    async def _authorize(self, call: Call, context: Context, uri: str) -> None:
        target, _ = self._resource_for(uri)
        if target is None:
            raise ResourceNotFoundError(uri, stateless=call.stateless)
        if target.access.restricted:
            item = target.uri_template if isinstance(target, ResourceTemplate) else target.uri
            await authorize(
                dataclasses.replace(context, item=item),
                target.access,
                kind="resource",
                authenticates=self.auth.anyone,
            )

    async def prompt(self, call: Call) -> JsonObject:
        name = call.string_param("name")
        prompt = self.server.prompts.get(name)
        if prompt is None:
            raise InvalidParamsError(f"Unknown prompt: {name}", data={"name": name})
        arguments = call.object_param("arguments")

        async def render(context: Context) -> JsonObject:
            return await user_code(f"Prompt '{name}'", prompt.get(arguments, context))

        invalid = f"Invalid arguments for prompt '{name}'"
        return await self._round(call, name, "prompts/get", prompt.access, render, lambda result: result, invalid)

    async def complete(self, call: Call) -> JsonObject:
        ref = call.object_param("ref")
        argument = call.object_param("argument")
        ref_type = ref.get("type")
        ref_name = ref.get("name") if ref_type == "ref/prompt" else ref.get("uri")
        argument_name, value = argument.get("name"), argument.get("value", "")
        if ref_type not in ("ref/prompt", "ref/resource") or not isinstance(ref_name, str):
            raise InvalidParamsError(
                "Invalid params: ref must be a ref/prompt with a name or a ref/resource with a uri"
            )
        if not isinstance(argument_name, str) or not isinstance(value, str):
            raise InvalidParamsError("Invalid params: argument needs a string name and value")
        known = self.server.prompts if ref_type == "ref/prompt" else self.server.templates
        if ref_name not in known:
            raise InvalidParamsError(f"Unknown {ref_type.removeprefix('ref/')}: {ref_name}")
        context_arguments = call.object_param("context").get("arguments") or {}
        completion = await user_code(
            "Completion", self.server.complete(ref_type, ref_name, argument_name, value, dict(context_arguments))
        )
        return {"completion": completion}

    async def _round(
        self,
        call: Call,
        item: str,
        kind: str,
        access: Access,
        work: Callable[[Context], Awaitable[Any]],
        answer: Callable[[Any], JsonObject],
        invalid: str,
    ) -> JsonObject:
        """Run `work` once through the pipeline: its answer, or at 2026-07-28 the `input_required` result when it
        asked the client something this round does not answer."""
        inputs = self.rounds.first(call) if "requestState" not in call.params else await self.rounds.open(call)
        try:
            deadline = self.pipeline.deadline_for(call.http, None)
            context = call.context(
                item=item, deadline=deadline, inputs=inputs, publish=self.publish, metrics=self.pipeline.metrics
            )
            value = await self.pipeline.read(context, kind, access, work)
        except InputRequired:
            return self.rounds.required(call, inputs)
        except ArgumentsError as exc:
            raise InvalidParamsError(
                f"{invalid}: " + "; ".join(exc.problems), data={"problems": exc.problems}
            ) from None
        return answer(value)

    def _resource_for(self, uri: str) -> tuple[Resource | ResourceTemplate | None, dict[str, str] | None]:
        """The static resource with this URI, else the first template that produces it (with its variables)."""
        resource = self.server.resources.get(uri)
        if resource is not None:
            return resource, None
        for template in self.server.templates.values():
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None, None
