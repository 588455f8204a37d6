"""`stratus gateway ...` against the real Redis: records added, listed, refused, imported, tested and removed."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from stratus import Settings, build_app
from stratus.handlers.cli import main
from tests.fixtures import sdk_upstream
from tests.fixtures.sample_server import server as sample
from tests.fixtures.servers import uvicorn_serving


@pytest.fixture(autouse=True)
def shared_store(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("STRATUS_SECRET_KEY", "STRATUS_APP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STRATUS_STORE", "redis://127.0.0.1:6379/0")
    monkeypatch.setenv("STRATUS_STORE_PREFIX", f"gw-admin-{secrets.token_hex(4)}")


def test_records_are_added_listed_and_removed_with_clear_refusals(capsys: pytest.CaptureFixture[str]) -> None:
    # Inactive: an added upstream that is active is connected at once, and these hosts are not to be reached.
    assert main(["gateway", "add", "search", '{"url": "https://search.example.com/mcp", "isActive": false}']) == 0
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
    assert listed[-1].split("\t")[:4] == ["search", "http", "https://search.example.com/mcp", "inactive"]
    assert out.splitlines()[-1] == "removed search"


@pytest.mark.uvicorn
def test_an_imported_file_is_recorded_and_its_upstream_tested_under_the_gateways_address_guard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with uvicorn_serving(build_app(sample, Settings())) as url:
        servers = tmp_path / "servers.json"
        servers.write_text(json.dumps({"mcpServers": {"sample": {"url": f"{url}/mcp"}}}))
        assert main(["gateway", "import", str(servers)]) == 0  # recorded, though connecting was refused
        assert main(["gateway", "test", "sample"]) == 1  # loopback, as `stratus serve --gateway` would refuse it
        refused = capsys.readouterr().err
        monkeypatch.setenv("STRATUS_GATEWAY_ALLOWED_NETWORKS", "127.0.0.0/8")
        assert main(["gateway", "test", "sample"]) == 0
    assert main(["gateway", "test", "sample"]) == 1  # the upstream is gone
    out, err = capsys.readouterr()
    assert refused.splitlines()[-1].startswith("sample: not connected: sample its address is not allowed")
    assert "STRATUS_GATEWAY_ALLOWED_NETWORKS" in refused and "127.0.0.1" not in refused
    assert "sample: connected, 3 tools: add, forecast, divide" in out
    assert err.startswith("sample: not connected: sample did not answer")


@pytest.mark.uvicorn
def test_add_connects_at_once_and_keeps_the_record_when_connecting_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with uvicorn_serving(build_app(sample, Settings())) as url:
        assert main(["gateway", "add", "refused", json.dumps({"url": f"{url}/mcp"})]) == 0
        monkeypatch.setenv("STRATUS_GATEWAY_ALLOWED_NETWORKS", "127.0.0.0/8")
        assert main(["gateway", "add", "sample", json.dumps({"url": f"{url}/mcp", "isTrusted": True})]) == 0
        assert main(["gateway", "add", "idle", json.dumps({"url": f"{url}/mcp", "isActive": False})]) == 0
    assert main(["gateway", "list"]) == 0
    out, err = capsys.readouterr()
    assert "sample: connected, 3 tools: add, forecast, divide" in out.splitlines()
    assert err.splitlines() == [
        "refused: not connected: refused its address is not allowed (private, loopback, link-local or reserved; "
        "allow its network with STRATUS_GATEWAY_ALLOWED_NETWORKS)"
    ]  # the inactive one is not tried
    listed = [line.split("\t")[0] for line in out.splitlines() if "\t" in line]
    assert listed[-3:] == ["refused", "sample", "idle"]


def test_update_merges_into_the_record_unless_told_to_replace_it(capsys: pytest.CaptureFixture[str]) -> None:
    entry = {"url": "https://search.example.com/mcp", "isActive": False, "isTrusted": True}
    assert main(["gateway", "add", "search", json.dumps(entry)]) == 0
    assert main(["gateway", "update", "search", '{"url": "https://two.example.com/mcp"}']) == 0
    assert main(["gateway", "update", "--replace", "search", '{"url": "https://three.example.com/mcp"}']) == 0
    out, _ = capsys.readouterr()
    merged, replaced = [line.split("\t")[:4] for line in out.splitlines()[-2:]]
    assert merged == ["search", "http", "https://two.example.com/mcp", "inactive"]  # isActive kept
    assert replaced == ["search", "http", "https://three.example.com/mcp", "active"]  # isActive gone


@pytest.mark.uvicorn
def test_discover_and_test_reach_upstreams_of_the_configuration_file_under_the_address_guard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with uvicorn_serving(sdk_upstream.subscribable_app(), lifespan="on") as url:  # type: ignore[arg-type]
        config = tmp_path / "gateway.json"
        config.write_text(json.dumps({"mcpServers": {"notes": {"url": f"{url}/mcp"}}}))
        monkeypatch.setenv("STRATUS_GATEWAY_CONFIG", str(config))
        assert main(["gateway", "discover", "notes"]) == 1
        refused = capsys.readouterr().err
        monkeypatch.setenv("STRATUS_GATEWAY_ALLOWED_NETWORKS", "127.0.0.0/8")
        assert main(["gateway", "discover", "notes"]) == 0
        assert main(["gateway", "test", "notes"]) == 0
        assert main(["gateway", "discover", "missing"]) == 2
    out, err = capsys.readouterr()
    assert refused.startswith("notes: not connected: notes its address is not allowed")
    assert "STRATUS_GATEWAY_ALLOWED_NETWORKS" in refused
    assert out.splitlines()[1:] == [
        "tools (1): touch",
        "prompts (1): summarise",
        f"resources (1): {sdk_upstream.BOARD}",
        "resourceTemplates (0): ",
        "notes: connected, 1 tools: touch",
    ]
    assert err == "stratus: missing: no such upstream\n"
