"""Whom an anonymous caller's quotas count: the source address the front door saw, from the request context
API Gateway and Function URLs write, never a header the client writes."""

from __future__ import annotations

from typing import Any

import pytest

from stratus.protocol.task_quota import quota_holder
from stratus.request.aws_context import source_ip


@pytest.mark.parametrize(
    ("context", "address"),
    [
        ({"http": {"sourceIp": "203.0.113.7"}}, "203.0.113.7"),  # HTTP API payload 2.0, Function URL
        ({"identity": {"sourceIp": "203.0.113.8"}}, "203.0.113.8"),  # REST API payload 1.0
        ({"headers": {"x-forwarded-for": "203.0.113.9"}}, None),
        ({"http": {"sourceIp": ""}}, None),
        (None, None),
    ],
)
def test_the_source_address_is_read_from_the_request_context_only(context: Any, address: str | None) -> None:
    assert source_ip(context) == address


@pytest.mark.parametrize(
    ("principal", "source", "holder"),
    [
        ("alice", "203.0.113.7", "alice"),
        (None, "203.0.113.7", "anonymous:203.0.113.7"),
        (None, "::ffff:203.0.113.7", "anonymous:203.0.113.7"),
        (None, "2001:db8:1:2:aaaa::1", "anonymous:2001:db8:1:2::/64"),
        (None, "not an address", "anonymous:unknown"),
        (None, None, "anonymous:unknown"),
    ],
)
def test_anonymous_quotas_are_held_by_address_and_ipv6_by_its_64(
    principal: str | None, source: str | None, holder: str
) -> None:
    assert quota_holder(principal, source) == holder
