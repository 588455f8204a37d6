"""Multi round-trip requests at 2026-07-28: questions become input_required results, and requestState is
trusted only when it is intact, fresh, unused, and presented by the same principal for the same request."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from stratus import Context, McpServer
from stratus.protocol.request_state import RequestStateError, StateSealer, request_digest
from tests.fixtures.clients import McpFactory
from tests.fixtures.wire import McpHttp, stateless_meta

pytestmark = pytest.mark.anyio

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CAPABLE = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}}})


def make_server() -> McpServer:
    server = McpServer("rounds")

    @server.tool()
    async def greet(ctx: Context) -> str:
        """Asks a name, then a colour, in two rounds."""
        name = (await ctx.elicit("Name?", NAME_FORM, key="name"))["content"]["name"]
        colour = (await ctx.elicit("Colour?", NAME_FORM, key="colour"))["content"]["name"]
        return f"{name} likes {colour}"

    @server.tool()
    async def both(ctx: Context) -> str:
        """Asks two things at once."""
        asked, sampled = await asyncio.gather(
            ctx.elicit("Name?", NAME_FORM),
            ctx.create_message([{"role": "user", "content": {"type": "text", "text": "hi"}}], 5),
        )
        return f"{asked['content']['name']} / {sampled['content']['text']}"

    return server


@pytest.fixture
async def mcp(mcp_factory: McpFactory) -> McpHttp:
    return await mcp_factory(make_server())


def accept(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


async def call(mcp: McpHttp, tool: str, **extra: Any) -> dict[str, Any]:
    response = await mcp.stateless("tools/call", {"name": tool, "arguments": {}, "_meta": CAPABLE, **extra})
    body: dict[str, Any] = response.json()
    return body


async def test_each_round_asks_what_is_missing_and_the_last_completes(mcp: McpHttp) -> None:
    first = (await call(mcp, "greet"))["result"]
    assert first["resultType"] == "input_required"
    assert list(first["inputRequests"]) == ["name"]
    second = (await call(mcp, "greet", inputResponses={"name": accept("Ada")}, requestState=first["requestState"]))[
        "result"
    ]
    assert list(second["inputRequests"]) == ["colour"] and second["requestState"] != first["requestState"]
    third = await call(mcp, "greet", inputResponses={"colour": accept("teal")}, requestState=second["requestState"])
    assert third["result"]["content"] == [{"type": "text", "text": "Ada likes teal"}]
    assert third["result"]["resultType"] == "complete"


async def test_questions_asked_together_come_in_one_round(mcp: McpHttp) -> None:
    first = (await call(mcp, "both"))["result"]
    assert sorted(first["inputRequests"]) == ["elicit-1", "sample-2"]
    answers = {"elicit-1": accept("Ada"), "sample-2": {"role": "assistant", "content": {"type": "text", "text": "yo"}}}
    done = await call(mcp, "both", inputResponses=answers, requestState=first["requestState"])
    assert done["result"]["content"] == [{"type": "text", "text": "Ada / yo"}]


async def test_a_missing_or_malformed_answer_is_asked_again(mcp: McpHttp) -> None:
    first = (await call(mcp, "greet"))["result"]
    again = (await call(mcp, "greet", inputResponses={"name": 12345}, requestState=first["requestState"]))["result"]
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["name"]


async def test_a_tampered_state_is_invalid_params(mcp: McpHttp) -> None:
    first = (await call(mcp, "greet"))["result"]
    tampered = first["requestState"][:-4] + ("AAAA" if not first["requestState"].endswith("AAAA") else "BBBB")
    refused = await call(mcp, "greet", inputResponses={"name": accept("Ada")}, requestState=tampered)
    assert refused["error"]["code"] == -32602


async def test_a_state_is_used_once(mcp: McpHttp) -> None:
    first = (await call(mcp, "greet"))["result"]
    retry = {"inputResponses": {"name": accept("Ada")}, "requestState": first["requestState"]}
    assert (await call(mcp, "greet", **retry))["result"]["resultType"] == "input_required"
    assert (await call(mcp, "greet", **retry))["error"]["code"] == -32602


async def test_a_state_for_another_request_is_refused(mcp: McpHttp) -> None:
    first = (await call(mcp, "greet"))["result"]
    refused = await call(mcp, "both", inputResponses={"name": accept("Ada")}, requestState=first["requestState"])
    assert refused["error"]["code"] == -32602


def test_states_expire_and_bind_to_their_principal_and_request() -> None:
    now = [1_000.0]
    sealer = StateSealer(b"key", clock=lambda: now[0])
    digest = request_digest("tools/call", {"name": "greet", "arguments": {}})
    state, _ = sealer.seal({"name": accept("Ada")}, principal="alice", digest=digest)
    assert sealer.open(state, principal="alice", digest=digest)[0] == {"name": accept("Ada")}
    for principal, other_digest in (("mallory", digest), ("alice", "another-request")):
        with pytest.raises(RequestStateError) as refused:
            sealer.open(state, principal=principal, digest=other_digest)
        assert getattr(refused.value, "code", None) == -32602
    now[0] += 601
    with pytest.raises(RequestStateError) as expired:
        sealer.open(state, principal="alice", digest=digest)
    assert getattr(expired.value, "code", None) == -32602
    with pytest.raises(RequestStateError) as other_key:
        StateSealer(b"other-key", clock=time.time).open(state, principal="alice", digest=digest)
    assert getattr(other_key.value, "code", None) == -32602


async def test_list_methods_never_answer_input_required(mcp: McpHttp) -> None:
    result = (await mcp.stateless("tools/list", {"_meta": CAPABLE})).json()["result"]
    assert result["resultType"] == "complete"
