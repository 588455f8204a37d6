"""The gateway's catalog: the upstreams' lists read (from the shared cache, else from each upstream) and made into
the registries the gateway serves.

Each upstream's tools are required: one that cannot list them is left out of the catalog, with the reason. Its
prompts, resources and templates are optional: a list that fails is served empty and reported as `upstream/kind`,
and not cached, so it is asked again next time. While the store is unavailable the lists are asked of the
upstreams themselves.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import NamedTuple, TypeVar

from stratus.errors import StoreUnavailableError
from stratus.gateway.aggregate import aggregate_tools
from stratus.gateway.config import Upstream
from stratus.gateway.list_cache import KINDS, ToolsCache
from stratus.gateway.operations import discover
from stratus.gateway.pool import UpstreamPool
from stratus.gateway.proxies import Forward, ProxyPrompt, ProxyResource, ProxyTemplate, ProxyTool
from stratus.gateway.upstream_client import UpstreamError, UpstreamUnavailableError
from stratus.server.policy import ToolPolicy
from stratus.server.prompts import Prompt
from stratus.server.resources import Resource, ResourceTemplate
from stratus.server.tools import Tool
from stratus.types import JsonObject

logger = logging.getLogger("stratus.gateway")
T = TypeVar("T")

CATALOG_SECONDS = 5.0
"""How long a container serves its catalog before rebuilding it."""

Offer = tuple[Upstream, dict[str, list[JsonObject]]]
"""An upstream and its lists, by kind (`tools`, `prompts`, `resources`, `resourceTemplates`)."""


class Catalog(NamedTuple):
    """The registries made of the upstreams' offers."""

    tools: dict[str, Tool]
    prompts: dict[str, Prompt]
    resources: dict[str, Resource]
    templates: dict[str, ResourceTemplate]
    renamed: tuple[str, ...]
    """What `aggregate_tools` renamed or left out, one note each."""
    tool_counts: dict[str, int]
    """How many tools each upstream offers."""


async def read_offers(pool: UpstreamPool, cache: ToolsCache) -> tuple[list[Offer], dict[str, str]]:
    """Every active upstream's lists, and the failures (an upstream left out, or one of its optional lists)."""
    offers: list[Offer] = []
    failures: dict[str, str] = {}
    for upstream in pool.upstreams:
        if not upstream.active:
            continue
        try:
            offers.append((upstream, await _offer(pool, upstream, cache, failures)))
        except (UpstreamError, UpstreamUnavailableError) as error:
            failures[upstream.name] = str(error)
            logger.warning("upstream left out of the catalog", extra={"upstream": upstream.name, "reason": str(error)})
    return offers, failures


async def _offer(
    pool: UpstreamPool, upstream: Upstream, cache: ToolsCache, failures: dict[str, str]
) -> dict[str, list[JsonObject]]:
    """The upstream's lists, from the shared cache, else discovered from the upstream and cached. Its tools are
    required; an optional list that fails is served empty and reported in `failures` (as `upstream/kind`), not
    cached, so it is asked again next time.

    Raises:
        UpstreamError, UpstreamUnavailableError: the tools could not be listed.
    """
    cached = {kind: await _unless_unavailable(cache.get(upstream, kind)) for kind in KINDS}
    if all(items is not None for items in cached.values()):
        return {kind: items or [] for kind, items in cached.items()}
    found = await discover(await pool.client(upstream.name))
    for kind, reason in found.failures.items():
        failures[f"{upstream.name}/{kind}"] = reason
    lists = found.lists()
    for kind, items in lists.items():
        if kind not in found.failures:
            await _unless_unavailable(cache.put(upstream, items, kind))
    return lists


def build_catalog(offers: list[Offer], policy: Callable[[str], ToolPolicy], forward: Forward) -> Catalog:
    """The offers as proxies whose work is `forward`: tools renamed `mcp__{server}__{tool}` where they clash (each
    with its upstream's `policy`), prompts likewise, resources and templates kept by the first upstream to offer
    them (a template form the gateway cannot match is listed by its upstream only)."""
    tools = aggregate_tools([(upstream, offer["tools"]) for upstream, offer in offers])
    prompts = aggregate_tools([(upstream, offer["prompts"]) for upstream, offer in offers], hide_disabled=False)
    resources: dict[str, Resource] = {}
    templates: dict[str, ResourceTemplate] = {}
    for upstream, offer in offers:
        for definition in offer["resources"]:
            if isinstance(definition.get("uri"), str):
                resources.setdefault(definition["uri"], ProxyResource(upstream.name, definition, forward))
        for definition in offer["resourceTemplates"]:
            if isinstance(definition.get("uriTemplate"), str):
                try:
                    template = ProxyTemplate(upstream.name, definition, forward)
                except ValueError:
                    continue
                templates.setdefault(template.uri_template, template)
    tool_counts: dict[str, int] = {}
    for routed in tools.tools:
        tool_counts[routed.upstream] = tool_counts.get(routed.upstream, 0) + 1
    return Catalog(
        tools={routed.name: ProxyTool(routed, policy(routed.upstream), forward) for routed in tools.tools},
        prompts={
            routed.name: ProxyPrompt(routed.upstream, routed.original, routed.definition, forward)
            for routed in prompts.tools
        },
        resources=resources,
        templates=templates,
        renamed=tools.renamed + prompts.renamed,
        tool_counts=tool_counts,
    )


async def _unless_unavailable(step: Awaitable[T]) -> T | None:
    """The store's answer, or None while it is unavailable: the lists are then asked of the upstreams themselves."""
    try:
        return await step
    except StoreUnavailableError:
        logger.warning("the store is unavailable: the gateway's lists bypass the cache")
        return None
