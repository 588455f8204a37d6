"""The store URL grammar (`memory://`, `redis://HOST`, `rediss://HOST`, `redis+cluster://HOST:PORT,...`,
`rediss+cluster://...`, `dynamodb://TABLE`), read in one place: `parse_store_url` turns a URL into a `StoreUrl`,
which settings check, the factory picks a backend by and the backend builds its client from. A leaf: settings check a
URL here without importing any backend."""

from typing import Literal, NamedTuple
from urllib.parse import parse_qs, urlsplit

WAITING_CONNECTIONS = 1000
"""Connections one process's Redis pool for long waits opens at most: each open stream following its log, and each
call awaiting its client's reply, holds one while it waits (`STRATUS_MAX_STREAMS` stays below it)."""

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
"""A Redis Cluster's scheme -> the scheme redis-py reads for one of its nodes (`rediss`: TLS)."""

Backend = Literal["memory", "redis", "dynamodb"]

_BACKENDS: dict[str, Backend] = {
    "memory": "memory",
    "redis": "redis",
    "rediss": "redis",
    **dict.fromkeys(CLUSTER_SCHEMES, "redis"),
    "dynamodb": "dynamodb",
}


class StoreConfigError(ValueError):
    """The store URL is malformed or names a backend this build cannot use."""


class StoreUrl(NamedTuple):
    """A store URL taken apart: the backend it names and what that backend reads from it."""

    url: str
    """The URL as written."""
    scheme: str
    backend: Backend
    table: str = ""
    """dynamodb: the table."""
    redis_url: str = ""
    """redis: the URL redis-py reads, of the server or (a cluster) of its first node: credentials, database, TLS
    and options such as `ssl_cert_reqs` kept, `max_connections` taken out (the pools are sized apart)."""
    cluster_nodes: tuple[tuple[str, int], ...] = ()
    """redis: every node a cluster URL names, from which the client learns the rest (empty: one server)."""
    max_connections: int | None = None
    """redis: the URL's `?max_connections=N`, the most connections a pool for calls opens (None: the default)."""

    @property
    def shared(self) -> bool:
        """Whether the store is shared between processes (so every secret must be too)."""
        return self.backend != "memory"

    @property
    def cluster(self) -> bool:
        """Whether the store is a Redis Cluster (several shards: scripts publish and streams follow per shard)."""
        return bool(self.cluster_nodes)


def parse_store_url(url: str) -> StoreUrl:
    """`url` taken apart, after checking it is one Stratus understands.

    Raises:
        StoreConfigError: with a message that says what is accepted.
    """
    parts = urlsplit(url)
    backend = _BACKENDS.get(parts.scheme)
    if backend == "memory":
        return StoreUrl(url, parts.scheme, backend)
    if backend == "dynamodb":
        if not parts.netloc or parts.path not in ("", "/"):
            raise StoreConfigError(f"store {url!r}: name the table, e.g. dynamodb://stratus-state")
        return StoreUrl(url, parts.scheme, backend, table=parts.netloc)
    if backend == "redis":
        return _redis_url(url)
    raise StoreConfigError(
        f"store {url!r}: expected memory://, redis://HOST, rediss://HOST, redis+cluster://HOST:PORT,HOST:PORT, "
        "rediss+cluster://... or dynamodb://TABLE"
    )


def _redis_url(url: str) -> StoreUrl:
    """A Redis URL, of one server or of a cluster:
    `redis+cluster://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/0][?OPTION=VALUE...]`.

    Any one reachable node is enough to find a cluster; naming several lets a cold start find it while one of them
    is down. A cluster has database 0 only.

    Raises:
        StoreConfigError: no host; a database that is not a number; for a cluster, a node without a host or with a
        bad port, or a database other than 0; a `max_connections` that is not a whole number.
    """
    parts = urlsplit(url)
    options = [option for option in parts.query.split("&") if option.partition("=")[0] != "max_connections"]
    max_connections = _max_connections(url, parts.query)
    parts = parts._replace(query="&".join(options))
    if parts.scheme not in CLUSTER_SCHEMES:
        if not parts.hostname:
            raise StoreConfigError(f"store {url!r}: a Redis URL needs a host, e.g. redis://127.0.0.1:6379/0")
        if parts.path not in ("", "/") and not parts.path[1:].isdigit():
            raise StoreConfigError(
                f"store {url!r}: the Redis database must be a number, e.g. redis://127.0.0.1:6379/0; got {parts.path!r}"
            )
        return StoreUrl(url, parts.scheme, "redis", redis_url=parts.geturl(), max_connections=max_connections)
    example = "e.g. redis+cluster://10.0.0.1:6379,10.0.0.2:6379"
    credentials, _, nodes = parts.netloc.rpartition("@")
    seeds: list[tuple[str, int]] = []
    for node in nodes.split(","):
        try:
            node_parts = urlsplit(f"//{node.strip()}")
            host, port = node_parts.hostname, node_parts.port or 6379
        except ValueError:
            host = None
        if not host:
            raise StoreConfigError(f"store {url!r}: each cluster node needs HOST or HOST:PORT, {example}")
        seeds.append((host, port))
    if parts.path not in ("", "/", "/0"):
        raise StoreConfigError(f"store {url!r}: a Redis Cluster has database 0 only; drop {parts.path!r}")
    first = nodes.split(",")[0].strip()
    netloc = f"{credentials}@{first}" if credentials else first
    node_url = parts._replace(scheme=CLUSTER_SCHEMES[parts.scheme], netloc=netloc, path="").geturl()
    return StoreUrl(
        url, parts.scheme, "redis", redis_url=node_url, cluster_nodes=tuple(seeds), max_connections=max_connections
    )


def _max_connections(url: str, query: str) -> int | None:
    """The query's `max_connections` (the first, as redis-py reads it); 0 or none: the default."""
    values = parse_qs(query).get("max_connections")
    if not values:
        return None
    if not values[0].isdigit():
        raise StoreConfigError(f"store {url!r}: max_connections must be a whole number, e.g. ?max_connections=50")
    return int(values[0]) or None
