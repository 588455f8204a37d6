"""A gateway on the buffered Lambda shape: `stratus.handlers.buffered` with `STRATUS_GATEWAY_CONFIG` serves the
upstreams of the file, warm invocations reusing the container's pooled connection, no watcher (a frozen container
cannot listen)."""

from __future__ import annotations

import asyncio
import importlib
import json
from pathlib import Path

import pytest

from stratus import Settings, build_app
from tests.fixtures.lambda_invoke import LambdaContext, event, stateless_request
from tests.fixtures.sample_server import server as sample
from tests.fixtures.servers import uvicorn_serving


@pytest.mark.uvicorn
def test_the_buffered_handler_serves_a_gateway_from_its_configuration_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, container_loop: asyncio.AbstractEventLoop
) -> None:
    with uvicorn_serving(build_app(sample, Settings())) as upstream:
        config = tmp_path / "servers.json"
        config.write_text(json.dumps({"mcpServers": {"sample": {"url": f"{upstream}/mcp"}}}))
        for name in ("STRATUS_APP", "STRATUS_STORE", "STRATUS_SECRET_KEY"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("STRATUS_GATEWAY_CONFIG", str(config))
        monkeypatch.setenv("STRATUS_GATEWAY_ALLOWED_NETWORKS", "127.0.0.0/8")
        monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "stratus-gateway")
        module = importlib.reload(importlib.import_module("stratus.handlers.buffered"))
        answers = []
        for _ in range(2):  # warm invocations on one container
            for method, params in [
                ("tools/list", {}),
                ("tools/call", {"name": "mcp__sample__add", "arguments": {"a": 40, "b": 2}}),
            ]:
                body, headers = stateless_request(method, params)
                response = module.handler(event("http_api_v2", body, headers), LambdaContext())
                assert response["statusCode"] == 200, response
                answers.append(json.loads(response["body"])["result"])
        gateway = module._server
        assert gateway.pool.watching is False
        assert len({id(client) for client in gateway.pool.clients()}) == 1  # one pooled connection, reused
        container_loop.run_until_complete(gateway.aclose())  # the container's end, which Lambda does not announce
        monkeypatch.delenv("STRATUS_GATEWAY_CONFIG")
        importlib.reload(module)  # leave the module serving STRATUS_APP again
    assert [tool["name"] for tool in answers[0]["tools"]] == [
        "mcp__sample__add",
        "mcp__sample__forecast",
        "mcp__sample__divide",
    ]
    assert answers[1]["structuredContent"] == answers[3]["structuredContent"] == {"result": 42}
