"""The container's event loop runs each invocation as an eager task (CPython 3.12 and later), reading asyncio's
private state: what the invocation sees of asyncio, and what runs before `run_invocation` returns, is what
`run_until_complete` gives it, on every supported CPython (tests/handlers/container_loop_checks.py). With
`STRATUS_EAGER_INVOCATIONS=false` the handler runs each invocation on a plain loop instead."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stratus import McpServer, Settings
from stratus.handlers.adapter import make_handler
from stratus.handlers.invocation import ContainerLoop
from stratus.settings import SettingsError
from tests.fixtures.fresh_interpreter import pyenv_python
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
from tests.handlers import container_loop_checks
from tests.handlers.container_loop_checks import CHECKS, LoopFactory

ROOT = Path(__file__).resolve().parents[2]
SUPPORTED_PYTHONS = ("3.11", "3.12", "3.13")


@pytest.mark.parametrize("check", CHECKS, ids=[check.__name__ for check in CHECKS])
def test_each_check_passes_in_this_interpreter(check: Callable[[LoopFactory], None]) -> None:
    check(ContainerLoop)


@pytest.mark.parametrize("version", SUPPORTED_PYTHONS)
def test_every_check_passes_on_each_supported_python_with_only_the_invocation_module_imported(version: str) -> None:
    python = pyenv_python(version)
    if python is None:
        pytest.skip(f"Python {version} skipped: pyenv has no {version}.x (~/.pyenv/versions)")
    ran = subprocess.run(
        [str(python), "-I", container_loop_checks.__file__, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": ""},
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0].startswith(f"python {version}.")
    assert lines[1] == f"module {ROOT / 'handlers' / 'invocation.py'}"  # this tree's, not an installed copy
    assert lines[2:] == [f"passed {check.__name__}" for check in CHECKS]


probe = McpServer("loop-probe", "1.0.0")
loops_seen: list[type[asyncio.AbstractEventLoop]] = []


@probe.tool()
async def add(a: int, b: int) -> int:
    """Add two integers, after a turn of the loop (whose class is kept in `loops_seen`)."""
    loops_seen.append(type(asyncio.get_running_loop()))
    await asyncio.sleep(0)
    return a + b


@pytest.fixture
def no_loop_set() -> Iterator[None]:
    """No event loop set, as in a fresh container: the handler sets its own, closed afterwards."""
    asyncio.set_event_loop(None)
    yield
    asyncio.get_event_loop().close()
    asyncio.set_event_loop(None)


def _call_add(eager: bool) -> dict[str, Any]:
    handler = make_handler(probe, Settings(eager_invocations=eager))
    body, headers = stateless_request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    answer: dict[str, Any] = handler(event("http_api_v2", body, headers), LambdaContext())
    handler.close()
    return answer


def test_with_eager_invocations_off_an_invocation_runs_on_a_plain_loop_and_answers_the_same(
    no_loop_set: None,
) -> None:
    loops_seen.clear()
    plain = _call_add(eager=False)
    asyncio.get_event_loop().close()
    asyncio.set_event_loop(None)
    eager = _call_add(eager=True)

    assert loops_seen == [asyncio.SelectorEventLoop, ContainerLoop]
    assert plain["statusCode"] == 200
    assert json.loads(plain["body"])["result"]["structuredContent"] == {"result": 5}
    assert plain == eager


def test_eager_invocations_is_on_unless_set_false_and_refuses_another_value() -> None:
    assert Settings.from_env({}).eager_invocations is True
    assert Settings.from_env({"STRATUS_EAGER_INVOCATIONS": "false"}).eager_invocations is False
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"STRATUS_EAGER_INVOCATIONS": "off"})
    assert refused.value.problems[0].startswith("STRATUS_EAGER_INVOCATIONS=")
