"""An upstream URL can carry credentials (userinfo, `?token=`): when the gateway's address guard refuses it, or an
HTTP+SSE upstream is logged, the log holds its scheme, host, port and path only."""

from __future__ import annotations

import logging

import anyio
import pytest

from stratus.gateway.config import Upstream
from stratus.gateway.served import GatewayServer
from stratus.gateway.upstream_client import UpstreamUnavailableError
from stratus.net.addresses import redacted
from tests.fixtures.addresses import ScriptedResolver

pytestmark = pytest.mark.anyio
SECRET_URL = "https://robot:hunter2@internal.example:8443/mcp?token=query-secret#frag-secret"


def logged_text(records: list[logging.LogRecord]) -> str:
    """Everything a log handler could write of these records: messages, extra fields and exception text."""
    parts: list[str] = []
    for record in records:
        parts.append(record.getMessage())
        parts.extend(str(value) for value in vars(record).values())
    return "\n".join(parts)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_refused_upstream_is_logged_without_its_userinfo_or_query(
    transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    upstream = Upstream(name="internal", transport=transport, url=SECRET_URL)
    gateway = GatewayServer([upstream], address_resolver=ScriptedResolver(["10.0.0.7"]), watch=False)
    try:
        with caplog.at_level(logging.DEBUG), anyio.fail_after(10), pytest.raises(UpstreamUnavailableError):
            client = await gateway.pool.client("internal")
            await client.list_tools()
    finally:
        await gateway.aclose()
    text = logged_text(caplog.records)
    assert "upstream address refused" in text
    assert "https://internal.example:8443/mcp" in text and "10.0.0.7" in text  # what the operator needs
    for secret in ("robot", "hunter2", "query-secret", "frag-secret"):
        assert secret not in text


@pytest.mark.parametrize(
    ("url", "logged"),
    [
        (SECRET_URL, "https://internal.example:8443/mcp"),
        ("http://[fd00:ec2::254]/latest?x=1", "http://[fd00:ec2::254]/latest"),
        ("http://example.com", "http://example.com"),
        ("http://[broken/path?token=a", "(not a URL)"),
        ("file:///etc/passwd?token=a", "file:(no host)"),
    ],
)
def test_a_redacted_url_keeps_scheme_host_port_and_path(url: str, logged: str) -> None:
    assert redacted(url) == logged
