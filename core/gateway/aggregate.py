"""Many upstreams' tools as one list: namespaced names, disabled tools hidden, clashes settled the same way every
time, and the route from each exposed name back to its upstream and original name.

An upstream's tool `search` is exposed as `mcp__{server}__search` (every character other than ASCII letters and
digits in either part becomes `_`), or as `search` when the upstream is not namespaced. A server's namespace
(`mcp__{server}__`) is its own: an un-namespaced upstream's tool named inside another server's namespace
(`mcp__github__create_issue` offered by anyone but `github`) is exposed under its own namespaced name instead, so it
can never shadow that server's tool (the configuration refuses servers whose namespaces overlap:
`stratus.gateway.config.namespace_collisions`). When two tools would be exposed under one name, the first in
configuration order keeps it; a later one from an un-namespaced upstream falls back to its namespaced name, and any
clash left gets a numeric suffix. Names stay within MCP's 128
characters (a long one is cut and given a short digest so it stays unique). A tool the configuration lists in
`disabledAutoApproveTools` carries `"stratus/autoApprove": false` in its `_meta`, so the host asks before each call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from stratus.gateway.config import Upstream, clean
from stratus.types import JsonObject

MAX_NAME = 128
AUTO_APPROVE_META = "stratus/autoApprove"
"""Set to false in the `_meta` of a tool its upstream's `disabledAutoApproveTools` names: the host must ask the user
before each call."""


@dataclass(frozen=True, slots=True)
class RoutedTool:
    """A tool as the gateway lists it, and where a call of it goes."""

    name: str
    upstream: str
    original: str
    definition: JsonObject


@dataclass(frozen=True, slots=True)
class Aggregate:
    """The gateway's tools in listing order, by exposed name, and what was renamed to avoid a clash."""

    tools: tuple[RoutedTool, ...]
    renamed: tuple[str, ...]

    def route(self, name: str) -> RoutedTool | None:
        return next((tool for tool in self.tools if tool.name == name), None)


def aggregate_tools(
    listings: Sequence[tuple[Upstream, Iterable[JsonObject]]], *, hide_disabled: bool = True
) -> Aggregate:
    """The tools of every active upstream (`listings` in configuration order, each with its tools/list); prompts
    are named the same way (`hide_disabled=False`: `disabledTools` concerns tools only)."""
    taken: dict[str, str] = {}
    tools: list[RoutedTool] = []
    renamed: list[str] = []
    namespaces = {upstream.prefix.lower(): upstream.name for upstream, _ in listings}
    for upstream, listed in listings:
        if not upstream.active:
            continue
        for definition in listed:
            original = definition.get("name")
            if not isinstance(original, str) or (hide_disabled and original in upstream.disabled_tools):
                continue
            wanted = _within_limit(upstream.prefix + clean(original) if upstream.namespaced else original)
            owner = None if upstream.namespaced else _namespace_owner(wanted, namespaces)
            trespass = owner not in (None, upstream.name)
            name = wanted
            if not upstream.namespaced and (name in taken or trespass):
                name = _within_limit(upstream.prefix + clean(original))
            base = name if trespass else wanted  # a suffix never brings it back into the other's namespace
            suffix = 2
            while name in taken:
                name = _within_limit(f"{base}_{suffix}")
                suffix += 1
            if name != wanted:
                why = f"{wanted} is in {owner}'s namespace" if trespass else f"{wanted} is {taken[wanted]}'s"
                renamed.append(f"{upstream.name}/{original} is {name}: {why}")
            taken[name] = f"{upstream.name}/{original}"
            exposed = {**definition, "name": name}
            if original in upstream.no_auto_approve_tools:
                meta = definition.get("_meta")
                exposed["_meta"] = {**(meta if isinstance(meta, dict) else {}), AUTO_APPROVE_META: False}
            tools.append(RoutedTool(name, upstream.name, original, exposed))
    return Aggregate(tuple(tools), tuple(renamed))


def _namespace_owner(name: str, namespaces: dict[str, str]) -> str | None:
    """The server whose namespace holds `name` (compared without case), if any."""
    lowered = name.lower()
    return next((server for prefix, server in namespaces.items() if lowered.startswith(prefix)), None)


def _within_limit(name: str) -> str:
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"
