"""`stratus local` prints each front door's full MCP endpoint, ready to paste into a client, and hands its local
settings to every container."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from stratus.emulator.command import container_overrides, door_lines, mcp_path
from stratus.emulator.local_aws import Served
from stratus.emulator.stack import read_stack

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


def test_each_door_is_printed_with_its_stage_and_the_mcp_path() -> None:
    served = [
        Served("HTTP API", "ServerlessHttpApi", "http://127.0.0.1:3000"),
        Served("REST API", "StreamingRestApi", "http://127.0.0.1:3001/v1"),
        Served("Function URL", "StreamingFunctionUrl", "http://127.0.0.1:3002"),
        Served("Lambda API", "Lambda", "http://127.0.0.1:3003/secret"),
    ]
    assert door_lines(served, "/mcp") == [
        "  HTTP API      ServerlessHttpApi        http://127.0.0.1:3000/mcp",
        "  REST API      StreamingRestApi         http://127.0.0.1:3001/v1/mcp",
        "  Function URL  StreamingFunctionUrl     http://127.0.0.1:3002/mcp",
        "  Lambda API    Lambda                   http://127.0.0.1:3003/secret",
    ]


def test_the_mcp_path_is_the_local_setting_else_the_templates_else_mcp() -> None:
    stack = read_stack(TEMPLATE, {})
    assert mcp_path(stack, {}) == "/mcp"
    assert mcp_path(stack, {"STRATUS_MCP_PATH": "/v2/mcp"}) == "/v2/mcp"


def test_the_local_log_level_reaches_every_container(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATUS_LOG_LEVEL", "DEBUG")
    args = argparse.Namespace(app=None, gateway=None)
    overrides = container_overrides(args, {"STRATUS_STORE": "memory://"})
    assert overrides["STRATUS_LOG_LEVEL"] == "DEBUG"
    assert overrides["STRATUS_STORE"] == "memory://"


def test_the_upstream_client_secret_given_locally_replaces_the_ssm_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    args = argparse.Namespace(app=None, gateway=None)
    assert "STRATUS_AUTH_UPSTREAM_CLIENT_SECRET" not in container_overrides(args, {})
    monkeypatch.setenv("STRATUS_AUTH_UPSTREAM_CLIENT_SECRET", "from-the-shell")
    assert container_overrides(args, {})["STRATUS_AUTH_UPSTREAM_CLIENT_SECRET"] == "from-the-shell"
