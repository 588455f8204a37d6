"""First run: every refusal a newcomer can undo by configuration names the setting that undoes it.

Each case drives one refusal through the real app (in process) or the real command line, and looks for the
setting's name in what the client (or the operator, at start-up) is told. Refusals of the stream caps, the body
timeout and the buffered response limit name theirs too: tests/test_stream_caps.py, tests/core/transport and
tests/handlers/test_buffered_limits.py drive those, which need a held stream, a trickled body or a Lambda event.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from stratus import McpServer, Settings, ToolError
from stratus.handlers.cli import main
from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from tests.fixtures.clients import McpFactory
from tests.fixtures.jwt_issuer import AUDIENCE, ISSUER, private_key
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import free_port
from tests.fixtures.wire import McpHttp, initialize_message, stateless_meta

server = McpServer("newcomer", "1.0.0")


@server.tool(rate_limit=RateLimit(rate=0.001, burst=1))
def once() -> str:
    """Allowed once, then refused for a long while."""
    return "ok"


@server.tool(breaker=BreakerPolicy(failure_threshold=1, window_seconds=300, cooldown_seconds=300))
def fragile() -> str:
    """Fails; its first failure opens its breaker."""
    raise ToolError("the backend is down", retryable=True)


@server.tool(scopes=["orders:write"])
def scoped() -> str:
    """Needs an authenticated caller with a scope."""
    return "ok"


def call(name: str, request_id: int = 1) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 tools/call and its mirrored headers."""
    params = {"name": name, "arguments": {}, "_meta": stateless_meta()}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}, headers


async def post_call(mcp: McpHttp, name: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body, mirrored = call(name)
    return await mcp.post(body, {**mirrored, **(headers or {})})


Case = Callable[[McpFactory], Awaitable[httpx.Response]]


async def foreign_host(factory: McpFactory) -> httpx.Response:
    return await post_call(await factory(server), "once", {"host": "mcp.example.net"})


async def foreign_origin(factory: McpFactory) -> httpx.Response:
    return await post_call(await factory(server), "once", {"origin": "https://app.example.net"})


async def large_body(factory: McpFactory) -> httpx.Response:
    mcp = await factory(server, Settings(max_body_bytes=1000))
    body, headers = call("once")
    body["params"]["arguments"] = {"padding": "x" * 2000}
    return await mcp.post(body, headers)


async def long_batch(factory: McpFactory) -> httpx.Response:
    mcp = await factory(server, Settings(max_batch_length=1))
    session = await mcp.initialize("2025-03-26")
    pings = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in (10, 11)]
    return await mcp.post(pings, session.headers)


async def large_batch_answer(factory: McpFactory) -> httpx.Response:
    mcp = await factory(server, Settings(max_batch_response_bytes=1))
    session = await mcp.initialize("2025-03-26")
    pings = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in (10, 11)]
    return await mcp.post(pings, session.headers)


async def every_session_taken(factory: McpFactory) -> httpx.Response:
    mcp = await factory(server, Settings(max_sessions=1))
    await mcp.initialize()
    return await mcp.post(initialize_message(request_id=9))


async def record_too_large(factory: McpFactory) -> httpx.Response:
    mcp = await factory(server, Settings(max_record_bytes=1000))
    opening = initialize_message()
    opening["params"]["clientInfo"]["name"] = "x" * 2000
    return await mcp.post(opening)


async def rate_limited(factory: McpFactory) -> httpx.Response:
    mcp = await factory(server)
    assert (await post_call(mcp, "once")).status_code == 200
    return await post_call(mcp, "once")


async def circuit_open(factory: McpFactory) -> httpx.Response:
    mcp = await factory(server)
    assert (await post_call(mcp, "fragile")).json()["result"]["isError"] is True
    return await post_call(mcp, "fragile")


async def scoped_tool_without_authentication(factory: McpFactory) -> httpx.Response:
    return await post_call(await factory(server), "scoped")


async def gateway_authentication_outside_api_gateway(factory: McpFactory) -> httpx.Response:
    return await post_call(await factory(server, Settings(auth_mode="gateway")), "once")


async def unreachable_jwks(factory: McpFactory) -> httpx.Response:
    jwks_url = f"http://127.0.0.1:{free_port()}/jwks"
    settings = Settings(auth_mode="jwt", auth_issuer=ISSUER, auth_audience=AUDIENCE, auth_jwks_url=jwks_url)
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "ana", "exp": 4_000_000_000}
    token = jwt.encode(claims, private_key("rsa-1", "rsa"), algorithm="RS256", headers={"kid": "rsa-1"})
    return await post_call(await factory(server, settings), "once", {"authorization": f"Bearer {token}"})


async def unreachable_store(factory: McpFactory) -> httpx.Response:
    settings = Settings(store=f"redis://127.0.0.1:{free_port()}/0", secret_key=SECRET_KEY, store_timeout_seconds=1.0)
    return await (await factory(server, settings)).post(initialize_message())


REFUSALS: list[tuple[Case, int, str]] = [
    (foreign_host, 421, "STRATUS_ALLOWED_HOSTS"),
    (foreign_origin, 403, "STRATUS_ALLOWED_ORIGINS"),
    (large_body, 413, "STRATUS_MAX_BODY_BYTES"),
    (long_batch, 400, "STRATUS_MAX_BATCH_LENGTH"),
    (large_batch_answer, 200, "STRATUS_MAX_BATCH_RESPONSE_BYTES"),
    (every_session_taken, 503, "STRATUS_MAX_SESSIONS"),
    (record_too_large, 200, "STRATUS_MAX_RECORD_BYTES"),
    (rate_limited, 200, "RateLimits"),
    (circuit_open, 200, "BreakerPolicy"),
    (scoped_tool_without_authentication, 403, "STRATUS_AUTH_MODE"),
    (gateway_authentication_outside_api_gateway, 401, "STRATUS_AUTH_MODE"),
    (unreachable_jwks, 401, "STRATUS_AUTH_JWKS_URL"),
    (unreachable_store, 503, "STRATUS_STORE"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("refuse", "status", "setting"), REFUSALS, ids=[case.__name__ for case, _, _ in REFUSALS])
async def test_a_refusal_names_the_setting_that_undoes_it(
    refuse: Case, status: int, setting: str, mcp_factory: McpFactory
) -> None:
    answer = await refuse(mcp_factory)
    assert answer.status_code == status, answer.text
    errors = [item.get("error") for item in (answer.json() if isinstance(answer.json(), list) else [answer.json()])]
    refused = [error for error in errors if isinstance(error, dict) and setting in json.dumps(error)]
    assert refused, answer.text
    assert "Traceback" not in answer.text and "Error(" not in answer.text


STARTS: list[tuple[str, list[str], dict[str, str], str]] = [
    ("unimportable app", ["--app", "not_a_module_here:server"], {}, "STRATUS_APP"),
    ("app that is not a server", ["--app", "tests.fixtures.sample_server:Unit"], {}, "STRATUS_APP"),
    ("malformed app", [], {"STRATUS_APP": "tests.fixtures.sample_server"}, "STRATUS_APP"),
    ("missing gateway file", ["--gateway", "{tmp}/absent.json"], {}, "STRATUS_GATEWAY_CONFIG"),
    ("bad gateway file", ["--gateway", "{tmp}/bad.json"], {}, "STRATUS_GATEWAY_CONFIG"),
    ("unusable store", ["--store", "dynamo://x"], {}, "STRATUS_STORE"),
    ("shared store without its key", ["--store", "redis://127.0.0.1:6379/0"], {}, "STRATUS_SECRET_KEY"),
    (
        "shared store with a guessable key",
        ["--store", "redis://127.0.0.1:6379/0"],
        {"STRATUS_SECRET_KEY": "summer2026"},
        "STRATUS_SECRET_KEY",
    ),
    ("unparsable number", [], {"STRATUS_MAX_BODY_BYTES": "4MB"}, "STRATUS_MAX_BODY_BYTES"),
    ("unknown setting", [], {"STRATUS_MAX_BODY_SIZE": "1"}, "STRATUS_MAX_BODY_SIZE"),
    ("jwt without its issuer", [], {"STRATUS_AUTH_MODE": "jwt"}, "STRATUS_AUTH_ISSUER"),
]


@pytest.mark.parametrize(("argv", "environ", "setting"), [case[1:] for case in STARTS], ids=[c[0] for c in STARTS])
def test_a_start_up_refusal_names_the_setting_that_undoes_it(
    argv: list[str],
    environ: dict[str, str],
    setting: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "bad.json").write_text('{"mcpServers": {"docs": {"url": 3}}}', encoding="utf-8")
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert main(["serve", *(arg.replace("{tmp}", str(tmp_path)) for arg in argv)]) == 2
    told = capsys.readouterr().err
    assert setting in told, told
    assert "Traceback" not in told


OUTSIDE_A_CHECKOUT: list[tuple[str, list[str]]] = [
    ("stratus serve", ["-m", "stratus.handlers.cli", "serve"]),
    ("the buffered Lambda handler", ["-c", "import stratus.handlers.buffered"]),
    ("the streaming Lambda entry point", ["-c", "from stratus.handlers.streaming import main; main()"]),
    (
        "the task worker",
        [
            "-c",
            "import asyncio; from stratus import Settings; from stratus.handlers.task_worker import run_task; "
            "asyncio.run(run_task(Settings(), 'task-1'))",
        ],
    ),
]


@pytest.mark.parametrize("command", [case[1] for case in OUTSIDE_A_CHECKOUT], ids=[c[0] for c in OUTSIDE_A_CHECKOUT])
def test_without_an_app_outside_a_checkout_the_start_stops_naming_stratus_app(
    command: list[str], tmp_path: Path
) -> None:
    """The demo is not installed with the wheel: with no app named, the start says which setting names one."""
    ran = subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path, env={}
    )
    assert ran.returncode != 0
    told = ran.stderr.strip().splitlines()[-1]
    assert "STRATUS_APP" in told, ran.stderr
