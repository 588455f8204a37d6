"""The gateway's SSRF guard: an upstream URL is called only if every address its host resolves to is public, or
lies in a network the operator allowed. Hosts are resolved for real (literals and /etc/hosts need no network)."""

from __future__ import annotations

import ipaddress

import pytest

from stratus.net.addresses import (
    UpstreamAddressError,
    check_upstream_address,
    check_upstream_address_async,
    parse_allowed_networks,
    refusal,
)

pytestmark = pytest.mark.anyio

REFUSED = [
    ("http://127.0.0.1:9000/mcp", "127.0.0.1"),  # loopback
    ("http://127.255.0.7/", "127.255.0.7"),
    ("http://10.1.2.3/", "10.1.2.3"),  # private
    ("http://172.16.0.1/", "172.16.0.1"),
    ("http://192.168.1.1/", "192.168.1.1"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),  # link-local: cloud metadata
    ("http://100.64.0.1/", "100.64.0.1"),  # shared (carrier-grade NAT)
    ("http://100.100.100.200/", "100.100.100.200"),  # another cloud's metadata, in the shared range
    ("http://0.0.0.0/", "0.0.0.0"),  # unspecified
    ("http://224.0.0.1/", "224.0.0.1"),  # multicast
    ("http://240.0.0.1/", "240.0.0.1"),  # reserved
    ("http://255.255.255.255/", "255.255.255.255"),
    ("http://192.0.2.1/", "192.0.2.1"),  # documentation: not globally reachable
    ("http://[::1]/", "::1"),
    ("http://[::]/", "::"),
    ("http://[fe80::1]/", "fe80::1"),  # IPv6 link-local
    ("http://[fd00:ec2::254]/", "fd00:ec2::254"),  # unique-local: the IPv6 instance metadata service
    ("http://[fc00::1]/", "fc00::1"),
    ("http://[fec0::1]/", "fec0::1"),  # site-local (deprecated, still not public)
    ("http://[ff02::1]/", "ff02::1"),  # IPv6 multicast
    ("http://[2001:db8::1]/", "2001:db8::1"),  # documentation
    ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),  # IPv4-mapped forms of refused addresses
    ("http://[::ffff:a9fe:a9fe]/", "::ffff:169.254.169.254"),
    ("http://[::ffff:10.0.0.1]/", "::ffff:10.0.0.1"),
    ("http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe"),  # NAT64 of the metadata service
]


@pytest.mark.parametrize(("url", "address"), REFUSED)
async def test_an_address_outside_the_public_internet_is_refused(url: str, address: str) -> None:
    with pytest.raises(UpstreamAddressError) as refused:
        await check_upstream_address_async(url)
    assert refused.value.address == ipaddress.ip_address(address)
    assert refused.value.url == url


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://2130706433/", "127.0.0.1"),  # decimal
        ("http://017700000001/", "127.0.0.1"),  # octal, one number
        ("http://0177.0.0.1/", "127.0.0.1"),  # octal, dotted
        ("http://0x7f.1/", "127.0.0.1"),  # hexadecimal, short form
        ("http://127.1/", "127.0.0.1"),  # short form
        ("http://2852039166/latest/meta-data/", "169.254.169.254"),  # the metadata service in decimal
        ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
        ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1"),  # IPv4-mapped, hexadecimal
        ("http://user@127.0.0.1#@example.com/", "127.0.0.1"),  # the host is after the userinfo, before the fragment
        ("http://localhost:8000/mcp", "127.0.0.1"),  # a name (from /etc/hosts) is judged by what it resolves to
    ],
)
async def test_odd_numeric_forms_are_judged_by_the_address_they_resolve_to(url: str, address: str) -> None:
    with pytest.raises(UpstreamAddressError) as refused:
        await check_upstream_address_async(url)
    assert refused.value.address in (ipaddress.ip_address(address), ipaddress.ip_address("::1"))


async def test_a_public_address_is_allowed_without_asking_any_network() -> None:
    assert await check_upstream_address_async("https://93.184.216.34/mcp") == (ipaddress.ip_address("93.184.216.34"),)
    public_v6 = "2606:2800:220:1:248:1893:25c8:1946"
    assert await check_upstream_address_async(f"https://[{public_v6}]:8443/") == (ipaddress.ip_address(public_v6),)
    assert await check_upstream_address_async("http://[::ffff:93.184.216.34]/") == (
        ipaddress.ip_address("::ffff:93.184.216.34"),
    )
    assert await check_upstream_address_async("http://[64:ff9b::5db8:d822]/") == (  # NAT64 of a public address
        ipaddress.ip_address("64:ff9b::5db8:d822"),
    )


async def test_an_allowed_network_lets_its_addresses_through_and_nothing_else() -> None:
    allowed = parse_allowed_networks("127.0.0.0/8, ::1/128")
    assert await check_upstream_address_async("http://127.0.0.1:9000/mcp", allowed) == (
        ipaddress.ip_address("127.0.0.1"),
    )
    assert await check_upstream_address_async("http://2130706433/", allowed) == (ipaddress.ip_address("127.0.0.1"),)
    assert await check_upstream_address_async("http://[::ffff:127.0.0.1]/", allowed)  # the mapped form too
    assert await check_upstream_address_async("http://[::1]/", allowed)
    for still_refused in ("http://10.0.0.1/", "http://169.254.169.254/", "http://[fd00:ec2::254]/"):
        with pytest.raises(UpstreamAddressError):
            await check_upstream_address_async(still_refused, allowed)


def test_the_blocking_variant_judges_the_same_way() -> None:
    allowed = parse_allowed_networks("10.0.0.0/8")
    assert check_upstream_address("http://10.9.8.7/", allowed) == (ipaddress.ip_address("10.9.8.7"),)
    assert check_upstream_address("https://93.184.216.34/") == (ipaddress.ip_address("93.184.216.34"),)
    with pytest.raises(UpstreamAddressError) as refused:
        check_upstream_address("http://2852039166/")
    assert refused.value.address == ipaddress.ip_address("169.254.169.254")
    with pytest.raises(UpstreamAddressError) as unresolved:
        check_upstream_address("http://no-such-host.invalid/")
    assert unresolved.value.address is None


async def test_a_host_that_does_not_resolve_is_a_clear_error() -> None:
    with pytest.raises(UpstreamAddressError) as unresolved:
        await check_upstream_address_async("http://no-such-host.invalid/mcp")  # .invalid never resolves (RFC 6761)
    assert unresolved.value.address is None
    assert "no-such-host.invalid" in str(unresolved.value)


async def test_a_resolver_that_does_not_answer_in_time_is_an_error_not_a_hang() -> None:
    with pytest.raises(UpstreamAddressError) as late:
        await check_upstream_address_async("https://93.184.216.34/", resolve_seconds=0)
    assert late.value.address is None


@pytest.mark.parametrize("url", ["http:///mcp", "mailto:someone", "http://[::1/mcp", ""])
async def test_a_url_without_a_host_is_refused(url: str) -> None:
    with pytest.raises(UpstreamAddressError) as refused:
        await check_upstream_address_async(url)
    assert refused.value.address is None


def test_refusal_says_why_or_nothing() -> None:
    assert refusal(ipaddress.ip_address("93.184.216.34")) is None
    assert refusal(ipaddress.ip_address("169.254.169.254")) is not None
    assert refusal(ipaddress.ip_address("169.254.169.254"), parse_allowed_networks("169.254.0.0/16")) is None


def test_allowed_networks_are_a_comma_separated_cidr_list() -> None:
    assert parse_allowed_networks("127.0.0.0/8, ::1/128,,10.0.0.5 ") == (
        ipaddress.ip_network("127.0.0.0/8"),
        ipaddress.ip_network("::1/128"),
        ipaddress.ip_network("10.0.0.5/32"),
    )
    assert parse_allowed_networks("") == ()


@pytest.mark.parametrize("bad", ["localhost", "127.0.0.1/8", "10.0.0.0/33", "fd00::/129"])
def test_an_entry_that_is_not_a_network_is_named_in_the_error(bad: str) -> None:
    with pytest.raises(ValueError, match="allowed network") as error:
        parse_allowed_networks(f"127.0.0.0/8, {bad}")
    assert repr(bad) in str(error.value)
