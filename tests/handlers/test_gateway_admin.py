"""`stratus gateway ...` against the real Redis: records added, listed, refused, imported, tested and removed."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from examples.demo import server as demo
from stratus import Settings, build_app
from stratus.handlers.cli import main
from tests.fixtures.servers import uvicorn_serving


@pytest.fixture(autouse=True)
def shared_store(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STRATUS_SECRET_KEY", "STRATUS_APP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STRATUS_STORE", "redis://127.0.0.1:6379/0")
    monkeypatch.setenv("STRATUS_STORE_PREFIX", f"gw-admin-{secrets.token_hex(4)}")


def test_records_are_added_listed_and_removed_with_clear_refusals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gateway", "add", "search", '{"url": "https://search.example.com/mcp"}']) == 0
    assert main(["gateway", "add", "search", '{"url": "https://other.example.com/mcp"}']) == 2
    assert main(["gateway", "add", "broken", '{"url": "ftp://x", "colour": 1}']) == 2
    assert main(["gateway", "add", "broken", "not json"]) == 2
    assert main(["gateway", "list"]) == 0
    assert main(["gateway", "remove", "search"]) == 0
    assert main(["gateway", "remove", "search"]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "stratus: search: already configured",
        "stratus: broken.colour: unknown field",
        "stratus: broken.url: expected an http(s) URL with a host",
        "stratus: the entry is not valid JSON",
        "stratus: search: no such upstream",
    ]
    listed = [line for line in out.splitlines() if line.startswith("search\t")]
    assert listed[-1].split("\t")[:4] == ["search", "http", "https://search.example.com/mcp", "active"]
    assert out.splitlines()[-1] == "removed search"


@pytest.mark.uvicorn
def test_an_imported_file_is_recorded_and_its_upstream_tested_under_the_gateways_address_guard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with uvicorn_serving(build_app(demo, Settings())) as url:
        servers = tmp_path / "servers.json"
        servers.write_text(json.dumps({"mcpServers": {"demo": {"url": f"{url}/mcp"}}}))
        assert main(["gateway", "import", str(servers)]) == 0
        assert main(["gateway", "test", "demo"]) == 1  # loopback, as `stratus serve --gateway` would refuse it
        refused = capsys.readouterr().err
        monkeypatch.setenv("STRATUS_GATEWAY_ALLOWED_NETWORKS", "127.0.0.0/8")
        assert main(["gateway", "test", "demo"]) == 0
    assert main(["gateway", "test", "demo"]) == 1  # the upstream is gone
    out, err = capsys.readouterr()
    assert refused.startswith("demo: demo its address is not allowed")
    assert "STRATUS_GATEWAY_ALLOWED_NETWORKS" in refused and "127.0.0.1" not in refused
    assert "demo: 3 tools: add, forecast, divide" in out
    assert err.startswith("demo: demo did not answer")
