"""`stratus serve` validates its configuration before it binds a port."""

from __future__ import annotations

import pytest

from handlers.cli import main


def test_an_unusable_store_exits_2_with_a_clear_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--store", "dynamo://x"]) == 2
    assert "STRATUS_STORE" in capsys.readouterr().err


def test_an_app_that_is_not_a_server_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--app", "examples.demo:Unit"]) == 2
    assert "is not an McpServer" in capsys.readouterr().err
