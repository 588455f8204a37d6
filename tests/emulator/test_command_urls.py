"""`stratus local` prints each front door's full MCP endpoint, ready to paste into a client, and hands its local
settings to every container."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from stratus.emulator.command import container_overrides, door_lines, mcp_path, shell_settings
from stratus.emulator.intrinsics import TemplateError
from stratus.emulator.local_aws import Served
from stratus.emulator.stack import read_stack
from tests.fixtures.processes import run_stratus

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


def test_every_stratus_variable_of_the_shell_reaches_every_function_but_those_the_template_owns() -> None:
    """Before, seven named variables were passed and the rest dropped silently (`STRATUS_MAX_BODY_BYTES` among
    them); a variable the template sets from the stack itself is named, not passed."""
    shell = {
        "STRATUS_MAX_BODY_BYTES": "2048",
        "STRATUS_MAX_BATCH_LENGTH": "30",
        "STRATUS_TASK_WORKER": "someone-elses-worker",
        "HOME": "/root",
    }
    args = argparse.Namespace(app=None, gateway=None)
    overrides = container_overrides(args, {"STRATUS_STORE": "memory://"}, shell)
    assert overrides["STRATUS_MAX_BODY_BYTES"] == "2048"
    assert overrides["STRATUS_MAX_BATCH_LENGTH"] == "30"
    assert "STRATUS_TASK_WORKER" not in overrides and "HOME" not in overrides
    _, skipped = shell_settings(shell)
    assert skipped == [
        "STRATUS_TASK_WORKER is not passed: template.yaml sets it (the task worker's name, from TaskWorkerFunction)"
    ]


def test_a_misspelt_or_unparseable_stratus_variable_stops_stratus_local_naming_each(tmp_path: Path) -> None:
    misspelt = {"STRATUS_MAX_BODY_BYTE": "2048", "STRATUS_MAX_BATCH_LENGTH": "many"}
    ran = run_stratus(["local", "--store", "memory://"], tmp_path, misspelt)
    assert ran.returncode == 2
    lines = ran.stderr.strip().splitlines()
    assert "stratus: unknown setting STRATUS_MAX_BODY_BYTE='2048': did you mean STRATUS_MAX_BODY_BYTES?" in lines
    assert any(line.startswith("stratus: STRATUS_MAX_BATCH_LENGTH='many': ") for line in lines), lines


def test_a_misspelt_template_parameter_is_refused_with_the_one_meant() -> None:
    with pytest.raises(TemplateError, match=r"^no such template parameter: AuthMod \(did you mean AuthMode\?\)$"):
        read_stack(TEMPLATE, {"AuthMod": "front"})
