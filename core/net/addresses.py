"""Whether an outgoing request may reach an address: the guard against server-side request forgery that the
gateway's upstreams and the authorization front's client metadata documents are fetched through.

A gateway fetches whatever URLs its configuration names, from inside the deployment's network. An upstream URL
must therefore not lead to the deployment itself or its neighbours: every address its host resolves to must be
globally reachable. Refused: loopback, private (RFC 1918), link-local (including the cloud metadata service at
169.254.169.254), shared (100.64.0.0/10), IPv6 unique-local (including fd00:ec2::254) and site-local, multicast,
reserved and unspecified addresses, and IPv6 forms that carry one of those (IPv4-mapped `::ffff:a.b.c.d`, NAT64
`64:ff9b::/96`), unless the address lies in a network the operator allowed (`127.0.0.0/8` for local development).

The host is resolved the way the connection will be (the system resolver, `getaddrinfo`), so numeric hosts in odd
forms (`2130706433`, `0177.0.0.1`, `0x7f.1`, `[::ffff:127.0.0.1]`) are judged by the address they really are, and
a name is refused if any one of its addresses is. A name can answer differently each time it is resolved (DNS
rebinding: a public address for the check, loopback for the connection), so the gateway's HTTP client checks with
an `AddressGuard` as it opens each connection and connects to an address it checked, never to the name.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
AddressInfo = tuple[Any, Any, Any, Any, tuple[Any, ...]]
Resolver = Callable[[str], Awaitable[Sequence[AddressInfo]]]
"""How a host name becomes addresses: `getaddrinfo`'s answers for it (only each answer's address is read)."""

RESOLVE_TIMEOUT_SECONDS = 5.0
_UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class UpstreamAddressError(ValueError):
    """An upstream URL the gateway must not call: no host, a host that does not resolve, or an address refused.

    `address` is the refused address (None when there was nothing to judge) and `reason` says what it is.
    """

    def __init__(self, url: str, reason: str, address: Address | None = None) -> None:
        self.url = url
        self.reason = reason
        self.address = address
        where = f" resolves to {address}, {reason}" if address is not None else f": {reason}"
        super().__init__(f"upstream {redacted(url)!r}{where}")  # its message is logged: never its secrets


def redacted(url: str) -> str:
    """An upstream URL as a log may hold it: scheme, host, port and path. Its userinfo, query and fragment can carry
    credentials (`?token=...`) and are left out."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "(not a URL)"
    if not host:
        return f"{parts.scheme}:(no host)"
    where = f"[{host}]" if ":" in host else host
    if port is not None:
        where += f":{port}"
    return f"{parts.scheme}://{where}{parts.path}"


def parse_allowed_networks(text: str) -> tuple[Network, ...]:
    """The networks of a comma-separated CIDR list (`127.0.0.0/8, ::1/128`; a bare address is one host).

    Raises:
        ValueError: naming the entry that is not a network (host bits set count as not one).
    """
    networks: list[Network] = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry))
        except ValueError as error:
            raise ValueError(f"allowed network {entry!r} is not a CIDR network, e.g. 127.0.0.0/8: {error}") from None
    return tuple(networks)


def refusal(address: Address, allowed: Sequence[Network] = ()) -> str | None:
    """Why the gateway must not call `address`, or None when it may."""
    if any(address in network for network in allowed):
        return None
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        reason = refusal(embedded, allowed)
        return None if reason is None else f"{reason} (as {embedded})"
    return _kind(address)


def _embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (IPv4-mapped or NAT64), if it is such a form."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _kind(address: Address) -> str | None:
    """What kind of address the gateway refuses this one is, None for a globally reachable one."""
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv6Address) and address in _UNIQUE_LOCAL:
        return "an IPv6 unique-local address"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "an IPv6 site-local address"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if address.is_private:
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "an address that is not globally reachable"
    return None


def _host(url: str) -> str:
    try:
        host = urlsplit(url).hostname
    except ValueError as error:  # e.g. an unbalanced "[" in the authority
        raise UpstreamAddressError(url, f"not a URL ({error})") from None
    if not host:
        raise UpstreamAddressError(url, "the URL names no host")
    return host


def _judge(url: str, infos: Sequence[AddressInfo], allowed: Sequence[Network]) -> tuple[Address, ...]:
    addresses: list[Address] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])  # without an IPv6 zone
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise UpstreamAddressError(url, "its host resolves to no address")
    for address in addresses:
        reason = refusal(address, allowed)
        if reason is not None:
            raise UpstreamAddressError(url, reason, address)
    return tuple(addresses)


def check_upstream_address(url: str, allowed: Sequence[Network] = ()) -> tuple[Address, ...]:
    """The addresses `url`'s host resolves to, after checking the gateway may call every one of them.

    Blocks while the system resolver works; on an event loop use `check_upstream_address_async`.

    Raises:
        UpstreamAddressError: the URL has no host, the host does not resolve, or an address is refused.
    """
    host = _host(url)
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        raise UpstreamAddressError(url, f"its host {host!r} does not resolve ({error})") from None
    return _judge(url, infos, allowed)


async def system_resolver(host: str) -> Sequence[AddressInfo]:
    """The system resolver's answers for `host`, asked off the event loop."""
    return await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)


async def check_upstream_address_async(
    url: str,
    allowed: Sequence[Network] = (),
    *,
    resolve_seconds: float = RESOLVE_TIMEOUT_SECONDS,
    resolver: Resolver = system_resolver,
) -> tuple[Address, ...]:
    """`check_upstream_address` with the host resolved by `resolver` (off the event loop), within
    `resolve_seconds`.

    Raises:
        UpstreamAddressError: the URL has no host, the host does not resolve in time, or an address is refused.
    """
    host = _host(url)
    try:
        async with asyncio.timeout(resolve_seconds):
            infos = await resolver(host)
    except TimeoutError:
        raise UpstreamAddressError(url, f"its host {host!r} did not resolve within {resolve_seconds:g} s") from None
    except (OSError, UnicodeError) as error:
        raise UpstreamAddressError(url, f"its host {host!r} does not resolve ({error})") from None
    return _judge(url, infos, allowed)


@dataclass(frozen=True, slots=True)
class AddressGuard:
    """The addresses a gateway may connect to: those not refused, or in `allowed` networks; names are resolved by
    `resolver`. Given to the HTTP client, which asks it once per new connection and connects to what it returned."""

    allowed: tuple[Network, ...] = ()
    resolver: Resolver = system_resolver
    resolve_seconds: float = RESOLVE_TIMEOUT_SECONDS

    async def addresses(self, url: str) -> tuple[Address, ...]:
        """Every address `url`'s host resolves to now, each checked, in the resolver's order.

        Raises:
            UpstreamAddressError: the host does not resolve in time, or one of its addresses is refused.
        """
        return await check_upstream_address_async(
            url, self.allowed, resolve_seconds=self.resolve_seconds, resolver=self.resolver
        )
