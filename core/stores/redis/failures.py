"""Why a Redis store failed, in one line for the operator: the exception's class, the server's address (never its
password) or Redis's error code, and what fixes it."""

from __future__ import annotations

from typing import Any


def endpoint(client: Any) -> str:
    """`host:port` (or the socket's path) the client connects to; a cluster's first node."""
    try:
        pool = getattr(client, "connection_pool", None)
        if pool is not None:
            options = pool.connection_kwargs
            if "path" in options:
                return str(options["path"])
            return f"{options.get('host', 'localhost')}:{options.get('port', 6379)}"
        nodes = client.get_nodes()
        return f"{nodes[0].host}:{nodes[0].port} (cluster)" if nodes else "the cluster of STRATUS_STORE"
    except Exception:  # noqa: BLE001 - a diagnosis must never fail the failure it describes
        return "the Redis of STRATUS_STORE"


def diagnosis(error: BaseException, client: Any, timeout: float) -> str:
    """The cause of `error` (raised by the client or returned in a pipeline's results) and its fix."""
    from redis import exceptions

    at = endpoint(client)
    kind = type(error).__name__
    if isinstance(error, exceptions.AuthenticationError | exceptions.AuthorizationError):
        return f"Redis at {at} refused the credentials ({kind}): check the user and password in STRATUS_STORE"
    if isinstance(error, TimeoutError | exceptions.TimeoutError):
        return (
            f"Redis at {at} did not answer within {timeout:g} s ({kind}): check that it runs and is reachable, or "
            "raise STRATUS_STORE_TIMEOUT_SECONDS"
        )
    if isinstance(error, exceptions.ConnectionError | OSError):
        return (
            f"Redis at {at} cannot be reached ({kind}): start Redis at {at} (e.g. `redis-server --port "
            f"{at.rpartition(':')[2]}`), or point STRATUS_STORE at one that runs"
        )
    if isinstance(error, exceptions.ResponseError):
        code = (str(error).split() or ["ERR"])[0]  # Redis's error code: WRONGTYPE, NOPERM, OOM, READONLY ...
        return f"Redis at {at} answered the error {code} ({kind})"
    return f"Redis at {at} failed ({kind})"
