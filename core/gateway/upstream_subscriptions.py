"""A client's resource subscription passed on to the upstream that owns the resource, when it takes subscriptions.

A handshake-era upstream is sent `resources/subscribe` on this container's session (never withdrawn: other
sessions, on other containers, may share it; streams filter per session). A 2026-07-28 upstream is asked for the
URI by this container's `subscriptions/listen` stream, reopened with the new filter; the subscription is answered
once the upstream acknowledged it, and the URI stops being asked for once every subscription this container passed
on for it is withdrawn (`resources/unsubscribe`, or the end of the `subscriptions/listen` that asked).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from stratus.gateway.forwarding import UpstreamUnavailableCallError
from stratus.gateway.pool import UpstreamPool
from stratus.gateway.proxies import Forward, ProxyResource, ProxyTemplate
from stratus.gateway.upstream_client import UpstreamUnavailableError
from stratus.server.resources import Resource, ResourceTemplate


def owner_of(uri: str, resources: Mapping[str, Resource], templates: Mapping[str, ResourceTemplate]) -> str | None:
    """The upstream serving `uri` (as a resource, else through a template), or None for none."""
    resource = resources.get(uri)
    if isinstance(resource, ProxyResource):
        return resource.upstream
    template = next((each for each in templates.values() if each.match(uri)), None)
    return template.upstream if isinstance(template, ProxyTemplate) else None


async def pass_on(pool: UpstreamPool, forward: Forward, owner: str, uri: str, within: float) -> None:
    """Subscribe `owner` to `uri` when it takes subscriptions: a 2026-07-28 upstream once its listen stream
    acknowledged the URI (when connections are watched), within `within` seconds.

    Raises:
        UpstreamCallError: the upstream refused it (its error, unchanged).
        UpstreamUnavailableCallError: the upstream did not answer (or acknowledge in time).
    """
    try:
        client = await pool.client(owner)
    except UpstreamUnavailableError as error:
        raise UpstreamUnavailableCallError(f"Upstream {owner} is unavailable: {error}") from None
    offered = client.capabilities.get("resources")
    if not isinstance(offered, dict) or offered.get("subscribe") is not True:
        return  # it announces no updates: the subscription is kept here only
    if not client.stateless:
        await forward(owner, "resources/subscribe", {"uri": uri}, None)
    elif pool.watching:
        await _listen_for(pool, owner, uri, within)


async def _listen_for(pool: UpstreamPool, owner: str, uri: str, within: float) -> None:
    interest = pool.interest(owner)
    version = interest.add(uri)
    try:
        async with asyncio.timeout(within):
            await interest.settled(version)
    except BaseException as error:  # not passed on after all (timed out, or its caller went away)
        interest.remove(uri)
        if isinstance(error, TimeoutError):
            raise UpstreamUnavailableCallError(
                f"Upstream {owner} did not acknowledge the subscription within {within:g} s"
            ) from None
        raise


def withdraw(pool: UpstreamPool, uri: str) -> None:
    """A subscription this container passed on was withdrawn: its 2026-07-28 upstream stops being asked for `uri`
    once none is left here."""
    for upstream in pool.upstreams:
        pool.interest(upstream.name).remove(uri)
