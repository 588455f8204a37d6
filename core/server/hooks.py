"""What the protocol layer calls on a server whose offer lives elsewhere (a gateway: its upstreams'), as a seam of its
own: a plain `McpServer` has no hooks, and building an app never changes the server it is given."""

from typing import Protocol

from stratus.stores.base import Stores
from stratus.types import JsonObject


class ServerHooks(Protocol):
    """The hooks of a dynamic server (`stratus.gateway.served.GatewayServer`)."""

    async def refresh(self, stores: Stores, method: str, params: JsonObject) -> None:
        """Bring the registries up to date before serving `method` (awaited before each request)."""

    async def subscribed(self, uri: str) -> None:
        """A client subscribed to updates of `uri` (a session's `resources/subscribe`, a `subscriptions/listen`
        filter): passed on to the upstream that owns the resource."""

    async def unsubscribed(self, uri: str) -> None:
        """A subscription announced to `subscribed` was withdrawn on this container."""

    def health(self) -> JsonObject:
        """What `/health` adds about the server (its upstreams), from what it already knows: it must not make
        `/health` wait on anything."""
        ...

    async def aclose(self) -> None:
        """Release what the server holds (its upstream connections); run when the app shuts down."""


class _NoHooks:
    """A plain server's: nothing to refresh, pass on, report or release."""

    async def refresh(self, stores: Stores, method: str, params: JsonObject) -> None:
        return None

    async def subscribed(self, uri: str) -> None:
        return None

    async def unsubscribed(self, uri: str) -> None:
        return None

    def health(self) -> JsonObject:
        return {}

    async def aclose(self) -> None:
        return None


NO_HOOKS: ServerHooks = _NoHooks()
_NAMES = ("refresh", "subscribed", "unsubscribed", "health", "aclose")


class _SomeHooks(_NoHooks):
    """A server that defines some of the hooks (a subclass observing subscriptions, say): those, and none else."""

    def __init__(self, server: object) -> None:
        for name in _NAMES:
            if callable(defined := getattr(server, name, None)):
                setattr(self, name, defined)


def hooks_of(server: object) -> ServerHooks:
    """`server`'s hooks: itself when it has them all (a gateway), the ones it defines, or none."""
    defined = [name for name in _NAMES if callable(getattr(server, name, None))]
    if len(defined) == len(_NAMES):
        return server  # type: ignore[return-value]  # it defines every hook
    return _SomeHooks(server) if defined else NO_HOOKS
