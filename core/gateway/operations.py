"""What an operator asks of an upstream: discover everything it offers, and test that it answers.

Discovery needs the tools list; prompts and resources are optional (many servers offer neither), so their
failures are reported beside what was found instead of failing the whole discovery.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.gateway.client import UpstreamClient, UpstreamError, UpstreamUnavailableError
from core.gateway.config import Upstream

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Discovery:
    """An upstream's offer: tools, prompts and resources, and what could not be listed (by kind: the reason)."""

    version: str | None
    tools: list[JsonObject]
    prompts: list[JsonObject] = field(default_factory=list)
    resources: list[JsonObject] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)


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
    for kind in ("prompts", "resources"):
        try:
            optional[kind] = await client.list_all(f"{kind}/list", kind)
        except UpstreamError as error:
            failures[kind] = f"{error.error.get('code')}: {error}"
        except UpstreamUnavailableError as error:
            failures[kind] = str(error)
    return Discovery(client.version, tools, optional.get("prompts", []), optional.get("resources", []), failures)


async def check_connection(upstream: Upstream, *, within: float = 10.0) -> ConnectionTest:
    """Connect, list the tools, disconnect: the answer an operator's "test" button shows."""
    client = UpstreamClient(upstream, timeout=within)
    try:
        await client.connect()
        return ConnectionTest(True, [str(tool.get("name")) for tool in await client.list_tools()])
    except (UpstreamError, UpstreamUnavailableError) as error:
        return ConnectionTest(False, [], str(error))
    finally:
        await client.close()
