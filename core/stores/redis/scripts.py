"""The script runner every Redis store uses: EVALSHA by name, NOSCRIPT reloads, several scripts in one pipelined
round trip, timeouts mapped to `StoreUnavailableError`; and the small codecs the stores share."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from stratus.errors import StoreUnavailableError
from stratus.stores.redis import lua
from stratus.tracing import store_span

GRACE_SECONDS = 60.0


ScriptCall = tuple[str, Sequence[str], Sequence[Any]]


@dataclass(frozen=True, slots=True)
class Command:
    """One plain Redis command, by its redis-py method name."""

    name: str
    args: Sequence[Any]
    options: dict[str, Any] = field(default_factory=dict)


def as_float(value: Any) -> float:
    return float(value.decode() if isinstance(value, bytes) else value)


class RedisScripts:
    """Runs the store's Lua scripts by SHA, alone or several in one round trip, loading them on NOSCRIPT."""

    def __init__(self, client: Any, prefix: str, *, timeout: float, cluster: bool = False) -> None:
        self.client = client
        self.prefix = prefix
        self.timeout = timeout
        self.cluster = cluster
        """A Redis Cluster client: pipelines are split per node (each script still runs on one slot), and a stream's
        appends go out on its shard's channel (SPUBLISH: only the shard holding the stream's slot carries it,
        where PUBLISH would cross every node of the cluster)."""
        self.publish = "SPUBLISH" if cluster else "PUBLISH"
        self._sha = {name: hashlib.sha1(source.encode()).hexdigest() for name, source in lua.ALL.items()}  # noqa: S324 - Redis names scripts by SHA-1

    def unavailable(self, message: str, error: BaseException) -> StoreUnavailableError:
        """The error a client is told (`message`), carrying for the log why `error` happened and what fixes it."""
        from stratus.stores.redis.failures import diagnosis

        return StoreUnavailableError(message, cause=diagnosis(error, self.client, self.timeout))

    @property
    def _errors(self) -> tuple[type[BaseException], ...]:
        # imported with the client, on first use (see stratus.stores.lazy)
        from redis.exceptions import RedisClusterException, RedisError

        # A cluster client that reaches no node, or finds a slot no primary serves (during a failover), raises
        # RedisClusterException, which is not a RedisError.
        return (RedisError, RedisClusterException, OSError, TimeoutError)

    @property
    def _no_script(self) -> type[BaseException]:
        from redis.exceptions import NoScriptError

        return NoScriptError

    def key(self, tag: str, *suffix: str) -> str:
        return ":".join([self.prefix, "{" + tag + "}", *suffix])

    async def run(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """One script, one round trip."""
        return (await self.run_many([(name, keys, args)]))[0]

    async def run_many(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """Several scripts pipelined in one round trip (on a cluster, one per node).

        Raises:
            StoreUnavailableError: Redis did not answer within the timeout or refused the connection.
        """
        try:
            async with asyncio.timeout(self.timeout):
                with store_span("redis", lambda: "EVALSHA " + " ".join(name for name, _, _ in calls)):
                    results = await self._pipeline(calls)
                if any(isinstance(result, self._no_script) for result in results):
                    await self._load()
                    results = await self._pipeline(calls)
        except self._errors as error:
            raise self.unavailable("The state store is unavailable; retry shortly", error) from error
        for result in results:
            if isinstance(result, BaseException):
                raise self.unavailable("The state store failed the request; retry shortly", result) from result
        return results

    async def command(self, name: str, *args: Any, blocking: bool = False, **kwargs: Any) -> Any:
        """One plain Redis command, bounded like the scripts (a blocking one by its own timeout argument).

        Raises:
            StoreUnavailableError: Redis did not answer within the timeout or refused the connection.
        """
        return await self.command_on(self.client, name, *args, blocking=blocking, **kwargs)

    async def command_on(self, target: Any, name: str, *args: Any, blocking: bool = False, **kwargs: Any) -> Any:
        """`command` on another connection of the client (e.g. a pub/sub subscription)."""
        limit = self.timeout + (float(kwargs.get("timeout", 0)) if blocking else 0)
        with store_span("redis", name.upper):
            return await self._bounded(lambda: getattr(target, name)(*args, **kwargs), limit)

    async def commands(self, calls: Sequence[Command]) -> list[Any]:
        """Plain commands pipelined in one round trip, bounded like the scripts."""

        async def pipelined() -> list[Any]:
            async with self.client.pipeline(transaction=False) as pipe:
                for call in calls:
                    getattr(pipe, call.name)(*call.args, **call.options)
                results: list[Any] = await pipe.execute()
                return results

        if not calls:
            return []
        with store_span("redis", lambda: " ".join(call.name.upper() for call in calls)):
            return list(await self._bounded(pipelined, self.timeout))

    async def _bounded(self, step: Callable[[], Awaitable[Any]], limit: float) -> Any:
        try:
            async with asyncio.timeout(limit):
                return await step()
        except self._errors as error:
            raise self.unavailable("The state store is unavailable; retry shortly", error) from error

    async def delete(self, key: str) -> bool:
        """Delete one key; whether it existed."""
        return bool(await self.command("delete", key))

    async def _pipeline(self, calls: Sequence[ScriptCall]) -> list[Any]:
        async with self.client.pipeline(transaction=False) as pipe:
            for name, keys, args in calls:
                # As a plain command: a cluster pipeline refuses its `evalsha` method, yet routes EVALSHA by its keys.
                pipe.execute_command("EVALSHA", self._sha[name], len(keys), *keys, *args)
            results: list[Any] = await pipe.execute(raise_on_error=False)
            return results

    async def _load(self) -> None:
        for source in lua.ALL.values():
            await self.client.script_load(source)


def as_text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def new_token() -> str:
    """A write token: tells this write, sent twice, from another writer's."""
    return secrets.token_hex(8)
