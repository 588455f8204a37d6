"""The store URL grammar (`memory://`, `redis://HOST`, `rediss://HOST`, `redis+cluster://HOST:PORT,...`,
`rediss+cluster://...`, `dynamodb://TABLE`) and what settings need to know about a backend before one is built.
A leaf: settings check a URL here without importing any backend."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

WAITING_CONNECTIONS = 1000
"""Connections one process's Redis pool for long waits opens at most: each open stream following its log, and each
call awaiting its client's reply, holds one while it waits (`STRATUS_MAX_STREAMS` stays below it)."""

CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
"""A Redis Cluster's scheme -> the scheme redis-py reads for one of its nodes (`rediss`: TLS)."""

REDIS_SCHEMES = ("redis", "rediss", *CLUSTER_SCHEMES)


class StoreConfigError(ValueError):
    """The store URL is malformed or names a backend this build cannot use."""


@dataclass(frozen=True, slots=True)
class ClusterUrl:
    """A `redis+cluster://` URL taken apart: one node's URL in redis-py's own form (credentials, TLS and options
    such as `?max_connections=N` for every node) and every node named, from which the client learns the rest."""

    node_url: str
    seeds: tuple[tuple[str, int], ...]


def validate_store_url(url: str) -> str:
    """The URL's scheme, after checking the URL is one Stratus understands.

    Raises:
        StoreConfigError: with a message that says what is accepted.
    """
    parts = urlsplit(url)
    if parts.scheme == "memory":
        return parts.scheme
    if parts.scheme in ("redis", "rediss"):
        if not parts.hostname:
            raise StoreConfigError(f"store {url!r}: a Redis URL needs a host, e.g. redis://127.0.0.1:6379/0")
        return parts.scheme
    if parts.scheme in CLUSTER_SCHEMES:
        cluster_url(url)
        return parts.scheme
    if parts.scheme == "dynamodb":
        if not parts.netloc or parts.path not in ("", "/"):
            raise StoreConfigError(f"store {url!r}: name the table, e.g. dynamodb://stratus-state")
        return parts.scheme
    raise StoreConfigError(
        f"store {url!r}: expected memory://, redis://HOST, rediss://HOST, redis+cluster://HOST:PORT,HOST:PORT, "
        "rediss+cluster://... or dynamodb://TABLE"
    )


def cluster_url(url: str) -> ClusterUrl:
    """`redis+cluster://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/0][?OPTION=VALUE...]` taken apart.

    Any one reachable node is enough to find the cluster; naming several lets a cold start find it while one of
    them is down. A cluster has database 0 only.

    Raises:
        StoreConfigError: no node named, a node without a host or with a bad port, or a database other than 0.
    """
    example = "e.g. redis+cluster://10.0.0.1:6379,10.0.0.2:6379"
    parts = urlsplit(url)
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
    return ClusterUrl(node_url, tuple(seeds))


def is_cluster(url: str) -> bool:
    """Whether the store is a Redis Cluster (several shards: scripts publish and streams follow per shard)."""
    return urlsplit(url).scheme in CLUSTER_SCHEMES


def is_shared(url: str) -> bool:
    """Whether the store is shared between processes (so every secret must be too)."""
    return urlsplit(url).scheme != "memory"
