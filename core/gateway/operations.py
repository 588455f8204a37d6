"""What is asked of an upstream: discover everything it offers (the gateway's catalog and an operator's look),
and test that it answers.

Discovery needs the tools list; prompts, resources and resource templates are optional (many servers offer none,
and those not in the upstream's capabilities are not asked for), so their failures are reported beside what was
found instead of failing the whole discovery.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stratus.gateway.config import Upstream
from stratus.gateway.upstream_client import UpstreamClient, UpstreamError, UpstreamUnavailableError
from stratus.net.addresses import AddressGuard
from stratus.types import JsonObject

OPTIONAL_LISTS = {"prompts": "prompts/list", "resources": "resources/list"}
OPTIONAL_LISTS["resourceTemplates"] = "resources/templates/list"
"""Each optional list (by its key in the list result) and its method."""


@dataclass(frozen=True, slots=True)
class Discovery:
    """An upstream's offer: tools, prompts, resources and templates, and what could not be listed (by kind: the
    reason)."""

    version: str | None
    tools: list[JsonObject]
    prompts: list[JsonObject] = field(default_factory=list)
    resources: list[JsonObject] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    templates: list[JsonObject] = field(default_factory=list)

    def lists(self) -> dict[str, list[JsonObject]]:
        """Every list by its kind (`tools`, `prompts`, `resources`, `resourceTemplates`)."""
        return {
            "tools": self.tools,
            "prompts": self.prompts,
            "resources": self.resources,
            "resourceTemplates": self.templates,
        }


@dataclass(frozen=True, slots=True)
class ConnectionTest:
    """Whether the upstream answered, its tools' names if it did, the reason if not."""

    ok: bool
    tools: list[str]
    error: str | None = None


async def discover(client: UpstreamClient) -> Discovery:
    """Everything the connected `client`'s upstream offers.

    Raises:
        UpstreamError, UpstreamUnavailableError: the tools list itself could not be had.
    """
    tools = await client.list_tools()
    optional: dict[str, list[JsonObject]] = {}
    failures: dict[str, str] = {}
    for kind, method in OPTIONAL_LISTS.items():
        capability = "resources" if kind == "resourceTemplates" else kind
        if capability not in client.capabilities:
            continue  # the upstream offers none: asking would be an error
        try:
            optional[kind] = await client.list_all(method, kind)
        except UpstreamError as error:
            failures[kind] = f"{error.error.get('code')}: {error}"
        except UpstreamUnavailableError as error:
            failures[kind] = str(error)
    return Discovery(
        client.version,
        tools,
        optional.get("prompts", []),
        optional.get("resources", []),
        failures,
        optional.get("resourceTemplates", []),
    )


async def check_connection(upstream: Upstream, *, guard: AddressGuard | None, within: float = 10.0) -> ConnectionTest:
    """Connect, list the tools, disconnect: the answer an operator's "test" button shows. `guard` is the one the
    gateway itself would connect under (None: anywhere), so the test says what serving it would do."""
    client = UpstreamClient(upstream, timeout=within, guard=guard)
    try:
        await client.connect()
        return ConnectionTest(True, [str(tool.get("name")) for tool in await client.list_tools()])
    except (UpstreamError, UpstreamUnavailableError) as error:
        return ConnectionTest(False, [], str(error))
    finally:
        await client.close()
