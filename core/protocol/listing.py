"""`tools/list`, `resources/list`, `resources/templates/list` and `prompts/list`, a page at a time."""

from __future__ import annotations

from stratus.protocol import versions
from stratus.protocol.call import Call
from stratus.protocol.lifecycle import LIST_TTL_MS
from stratus.server.pagination import Paginator
from stratus.server.server import McpServer
from stratus.types import JsonObject


class Listings:
    def __init__(self, server: McpServer, paginator: Paginator) -> None:
        self.server = server
        self.paginator = paginator

    async def tools(self, call: Call) -> JsonObject:
        with_execution = not call.stateless and versions.at_least(call.version, versions.TASKS_SINCE)
        definitions = [
            {**tool.definition(), "execution": {"taskSupport": tool.task_support}}
            if with_execution and tool.task_support
            else tool.definition()
            for tool in self.server.tools.values()
        ]
        return self._page(call, "tools", definitions)

    async def resources(self, call: Call) -> JsonObject:
        return self._page(call, "resources", [item.definition for item in self.server.resources.values()])

    async def templates(self, call: Call) -> JsonObject:
        return self._page(call, "resourceTemplates", [item.definition for item in self.server.templates.values()])

    async def prompts(self, call: Call) -> JsonObject:
        return self._page(call, "prompts", [prompt.definition for prompt in self.server.prompts.values()])

    def _page(self, call: Call, kind: str, items: list[JsonObject]) -> JsonObject:
        page, next_cursor = self.paginator.page(kind, items, call.params.get("cursor"))
        result: JsonObject = {kind: list(page)}
        if next_cursor:
            result["nextCursor"] = next_cursor
        if call.stateless:
            result["ttlMs"] = LIST_TTL_MS
            result["cacheScope"] = "public"
        return result
