"""What a server or a single tool declares about how its calls run: access, limits, resilience, middleware.

These are declarations only; `stratus.pipeline` carries them out. Immutable records are `NamedTuple`s: build them
with keyword arguments.
"""

# NamedTuples, not dataclasses: they cost a fraction of a dataclass to define at cold start (docs/benchmarks.md).

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from stratus.frozen import Frozen
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit

if TYPE_CHECKING:
    from stratus.server.context import Context
    from stratus.server.principal import Principal

CallNext = Callable[["Context"], Awaitable[Any]]


class Middleware(Protocol):
    """`async (ctx, call_next) -> result`: runs around a call; may rewrite the context or the result."""

    async def __call__(self, ctx: "Context", call_next: CallNext, /) -> Any: ...


class Authenticator(Protocol):
    """A global guard: returns the principal it established (None leaves the user as it is) or raises to deny."""

    async def __call__(self, ctx: "Context", /) -> "Principal | None": ...


class Guard(Protocol):
    """A per-item guard: whether this request may use this tool, resource or prompt."""

    async def __call__(self, ctx: "Context", /) -> bool: ...


class Access(NamedTuple):
    """Who may use an item. Public skips every check; otherwise all scopes, at least one role, every guard."""

    public: bool = False
    scopes: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    guards: tuple[Guard, ...] = ()

    @property
    def restricted(self) -> bool:
        return not self.public and bool(self.scopes or self.roles or self.guards)

    def grants(self, user: "Principal | None") -> bool:
        """Whether `user` holds what the item's scopes and roles ask (its guards are not consulted)."""
        if not self.restricted:
            return True
        if user is None or not user.scopes.issuperset(self.scopes):
            return False
        return not self.roles or bool(user.roles.intersection(self.roles))


class RetryPolicy(Frozen):
    """Retry errors marked retryable, with full-jitter backoff inside the deadline.

    Declared on a tool, it applies to that tool as declared; declared server-wide, only to tools annotated
    `idempotentHint` (retrying a call with side effects is the tool author's decision, not the server's).
    """

    __slots__ = ("attempts", "base_delay", "max_delay")
    attempts: int
    base_delay: float
    max_delay: float

    def __init__(self, *, attempts: int = 3, base_delay: float = 0.05, max_delay: float = 1.0) -> None:
        if attempts < 1 or base_delay < 0 or max_delay < 0:
            raise ValueError("a retry policy needs attempts >= 1 and non-negative delays")
        self._set(attempts=attempts, base_delay=base_delay, max_delay=max_delay)


class RateLimits(NamedTuple):
    """Server-wide limits: each tool, each principal, each session, and all calls together."""

    per_tool: RateLimit | None = None
    per_principal: RateLimit | None = None
    per_session: RateLimit | None = None
    overall: RateLimit | None = None


class ToolPolicy(NamedTuple):
    """What one tool declares beside its function."""

    access: Access = Access()
    rate_limit: RateLimit | None = None
    timeout: float | None = None
    retry: RetryPolicy | None = None
    breaker: BreakerPolicy | None = None
    middleware: Sequence[Middleware] = ()
    group: str | None = None
    """Tools of one group share their tool rate limit and circuit breaker (a gateway's upstream); default: the
    tool's name."""


class ServerPolicy(NamedTuple):
    """What applies to every call of a server."""

    authenticators: Sequence[Authenticator] = ()
    middleware: Sequence[Middleware] = ()
    rate_limits: RateLimits = RateLimits()
    timeout: float | None = None
    retry: RetryPolicy | None = None
    breaker: BreakerPolicy | None = None
    deadline_margin: float = 0.5
    """Seconds kept back from Lambda's remaining time, so a timeout answers before Lambda stops the container."""
