"""The gateway's upstream configuration: the hosts' `mcpServers` document, read strictly, every problem named."""

from __future__ import annotations

import json

import pytest

from stratus.gateway.config import GatewayConfigError, Upstream, parse_document, parse_servers

DOCUMENT = {
    "mcpServers": {
        "github": {"url": "https://api.example.com/mcp", "headers": {"Authorization": "ssm:/gw/github-token"}},
        "legacy": {"type": "sse", "url": "https://old.example.com/sse", "disabledTools": ["drop_tables"]},
        "files": {"command": "python", "args": ["-m", "files_server"], "env": {"ROOT": "/data"}},
        "my server.v2": {
            "url": "http://127.0.0.1:9000/mcp",
            "namespaced": False,
            "isActive": False,
            "disabledAutoApproveTools": ["delete"],
            "scope": "local",
        },
    }
}


def test_a_hosts_document_gives_one_upstream_per_server_with_its_transport_and_settings() -> None:
    upstreams = {upstream.name: upstream for upstream in parse_document(json.dumps(DOCUMENT))}
    assert upstreams["github"] == Upstream(
        name="github",
        transport="http",
        url="https://api.example.com/mcp",
        headers={"Authorization": "ssm:/gw/github-token"},
    )
    assert (upstreams["legacy"].transport, upstreams["legacy"].disabled_tools) == ("sse", frozenset({"drop_tables"}))
    files = upstreams["files"]
    assert (files.transport, files.command, files.args, files.env) == (
        "stdio",
        "python",
        ("-m", "files_server"),
        {"ROOT": "/data"},
    )
    local = upstreams["my server.v2"]
    assert (local.active, local.namespaced, local.scope) == (False, False, "local")
    assert local.no_auto_approve_tools == frozenset({"delete"})
    assert local.prefix == "mcp__my_server_v2__"
    assert not files.concurrent_calls  # calls take turns on a shared stream unless the document says otherwise


def test_calls_may_overlap_on_a_shared_stream_only_when_the_document_says_so() -> None:
    document = {"mcpServers": {"files": {"command": "srv", "concurrentCalls": True}, "odd": {"command": "srv"}}}
    upstreams = {upstream.name: upstream for upstream in parse_document(json.dumps(document))}
    assert (upstreams["files"].concurrent_calls, upstreams["odd"].concurrent_calls) == (True, False)
    with pytest.raises(GatewayConfigError) as refused:
        parse_document(json.dumps({"mcpServers": {"files": {"command": "srv", "concurrentCalls": "yes"}}}))
    assert refused.value.problems == ["files.concurrentCalls: expected true or false"]


def test_every_problem_of_a_document_is_reported_at_once_naming_its_server_and_field() -> None:
    document = {
        "mcpServers": {
            "no-url": {"type": "http"},
            "ftp": {"url": "ftp://files.example.com"},
            "no-command": {"type": "stdio", "url": "https://x.example.com"},
            "odd": {"type": "pigeon", "url": "wss://x.example.com", "colour": "blue"},
            "socket": {"type": "websocket", "url": "https://x.example.com"},
            "typed": {"url": "https://x.example.com", "args": "-v", "headers": {"X": 1}, "isActive": "yes"},
            "a.b": {"url": "https://a.example.com"},
            "a_b": {"url": "https://b.example.com"},
            "-bad": {"url": "https://c.example.com"},
            "pinned": {"url": "https://d.example.com", "protocolVersion": "1999-01-01"},
            "stdio-modern": {"command": "srv", "protocolVersion": "2026-07-28"},
        }
    }
    with pytest.raises(GatewayConfigError) as refused:
        parse_document(json.dumps(document))
    assert refused.value.problems == [
        "no-url.url: expected an http(s) URL with a host",
        "ftp.url: expected an http(s) URL with a host",
        "no-command.command: a stdio server needs a command",
        "no-command.url: a stdio server has no url",
        "odd.colour: unknown field",
        "odd.type: expected one of http, sse, stdio, websocket, got 'pigeon'",
        "socket.url: expected a ws(s) URL with a host",
        "typed.args: expected a list of strings",
        "typed.headers: expected an object of strings",
        "typed.isActive: expected true or false",
        "'-bad': a name is 1-64 letters, digits, spaces, '.', '_' or '-', starting alphanumeric",
        "pinned.protocolVersion: expected one of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05",
        "stdio-modern.protocolVersion: a stdio server speaks a handshake-era revision",
        "a_b: the same tool namespace as a.b (names differ only in punctuation)",
    ]


def test_a_server_defined_twice_or_a_document_that_is_not_json_is_refused_clearly() -> None:
    twice = '{"mcpServers": {"github": {"url": "https://a.example.com"}, "github": {"url": "https://b.example.com"}}}'
    with pytest.raises(GatewayConfigError) as repeated:
        parse_document(twice)
    assert repeated.value.problems == ["github: defined more than once"]
    for broken in ("{", "[]", '{"mcpServers": []}'):
        with pytest.raises(GatewayConfigError) as refused:
            parse_document(broken)
        assert len(refused.value.problems) == 1


def test_servers_whose_tool_namespaces_overlap_are_all_refused_at_configuration() -> None:
    document = {
        "mcpServers": {
            "a": {"url": "https://a.example.com"},
            "a__b": {"url": "https://ab.example.com"},  # a's tool b__c and a__b's tool c are both mcp__a__b__c
            "x": {"url": "https://x.example.com"},
            "x_": {"url": "https://x2.example.com"},  # x's tool _y and x_'s tool y are both mcp__x___y
            "Git.Hub": {"url": "https://g.example.com"},
            "git-hub": {"url": "https://g2.example.com"},
            "github": {"url": "https://g3.example.com"},  # apart from git_hub: mcp__github__ is no prefix of it
        }
    }
    with pytest.raises(GatewayConfigError) as refused:
        parse_servers(document)
    assert refused.value.problems == [
        "a__b: its tool namespace mcp__a__b__ and a's mcp__a__ overlap (a's tools can be named like a__b's);"
        " rename one",
        "x_: its tool namespace mcp__x___ and x's mcp__x__ overlap (x's tools can be named like x_'s); rename one",
        "git-hub: the same tool namespace as Git.Hub (names differ only in punctuation)",
    ]
