"""What a cold start imports: no AWS SDK, Redis client or tracer unless the configuration asks for one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import stratus
from tests.fixtures.fresh_interpreter import run_fresh
from tests.fixtures.keys import SECRET_KEY

# What a cold start must not pay for: AWS SDK, Redis client, tracer, wire-type models, validators, HTTP clients,
# and a web framework where a dict of routes does (Starlette cost about 25 ms CPU here).
HEAVY = [
    "boto3",
    "botocore",
    "redis",
    "aws_lambda_powertools",
    "aws_xray_sdk",
    "mcp",
    "mcp_types",
    "jsonschema",
    "httpx",
    "starlette",
    "websockets",  # a gateway's ws:// upstreams only
    "urllib.request",  # the JWKS fetcher's HTTP client (http.client, email): JWT auth only
]


def _probe(code: str) -> Any:
    """What `code`, run in a fresh interpreter with no environment, prints as JSON."""
    return json.loads(run_fresh(code))


def test_the_buffered_handler_imports_no_aws_sdk_redis_client_or_tracer() -> None:
    probe = (
        "import json, sys; import stratus.handlers.buffered; "
        f"print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))"
    )
    assert _probe(probe) == []


OTEL_PROBE = (
    "import json, sys; from stratus import Settings, build_app; from tests.fixtures.sample_server import server; "
    "import stratus.handlers.{shape}; build_app(server, Settings.from_env()); "
    "print(json.dumps(sorted({{name.split('.')[0] for name in sys.modules if name.startswith('opentelemetry')}})))"
)


@pytest.mark.parametrize("shape", ["buffered", "streaming"])
def test_with_tracing_off_no_module_of_opentelemetry_is_imported_and_with_it_on_they_are(shape: str) -> None:
    """Either shape's handler with its app built: tracing off imports nothing of OpenTelemetry (the official SDK
    client's dependency, opentelemetry-api, is installed beside it), tracing on imports it."""
    probe = OTEL_PROBE.format(shape=shape)
    assert json.loads(run_fresh(probe)) == []
    assert json.loads(run_fresh(probe, {"STRATUS_TRACING": "console"})) == ["opentelemetry"]


def test_a_gateway_imports_the_websocket_library_only_when_a_websocket_upstream_connects(tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    servers = {"web": {"url": "https://api.example.com/mcp"}, "socket": {"url": "wss://ws.example.com/mcp"}}
    config.write_text(json.dumps({"mcpServers": servers}))
    probe = (
        "import json, sys; from stratus.settings import Settings; from stratus.handlers.loading import load_served; "
        "from stratus.gateway.upstream_client import make_transport; "
        f"gateway = load_served(Settings(gateway_config={str(config)!r})); "
        "make_transport(gateway.pool.upstreams[0], timeout=1.0); before = 'websockets' in sys.modules; "
        "make_transport(gateway.pool.upstreams[1], timeout=1.0); made = 'websockets' in sys.modules; "
        "print(json.dumps([before, made]))"
    )
    assert _probe(probe) == [False, False]  # not even a ws:// transport until it connects


def test_powertools_telemetry_loads_no_tracer_unless_the_served_code_makes_one() -> None:
    """The X-Ray SDK behind Powertools' `Tracer` is the tool's to load: Stratus only annotates the subsegments of a
    `Tracer` the served code made."""
    probe = (
        "import json, sys; import stratus.handlers.buffered; "
        "print(json.dumps(['aws_lambda_powertools' in sys.modules, 'aws_xray_sdk' in sys.modules]))"
    )
    settings = {"STRATUS_TELEMETRY": "powertools", "STRATUS_APP": "examples.powertools:server"}
    assert json.loads(run_fresh(probe, settings)) == [True, False]


def test_core_exports_exactly_its_dunder_all() -> None:
    names = {
        name
        for name, value in vars(stratus).items()
        if not name.startswith("_") and not isinstance(value, type(stratus))
    }
    assert sorted(names) == sorted(stratus.__all__)


def test_a_tool_with_plain_parameters_is_served_without_importing_pydantic() -> None:
    probe = (
        "import json, sys; sys.path.insert(0, 'bench'); import wire, examples.add; "
        "response = examples.add.handler(wire.STATELESS_CALL_EVENT, None); "
        "print(json.dumps([response['statusCode'], 'pydantic' in sys.modules, 'pydantic_core' in sys.modules]))"
    )
    assert _probe(probe) == [200, False, False]


def test_a_shared_store_client_is_imported_only_when_a_request_needs_the_store() -> None:
    """On Redis, a 2026-07-28 call of a tool without limits needs no store: redis-py (about 45 ms of CPU) waits for
    the first request that does, such as a handshake-era initialize."""
    probe = (
        "import json, sys; sys.path.insert(0, 'bench'); import wire, examples.add; "
        "called = examples.add.handler(wire.STATELESS_CALL_EVENT, None); before = 'redis' in sys.modules; "
        "opened = examples.add.handler(wire.http_api_event(wire.HANDSHAKE_INITIALIZE_BODY, wire.BASE_HEADERS), None); "
        "print(json.dumps([called['statusCode'], before, opened['statusCode'], 'redis' in sys.modules]))"
    )
    settings = {
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_STORE_PREFIX": "cold-start-test",
    }
    assert json.loads(run_fresh(probe, settings)) == [200, False, 200, True]


def test_the_streaming_entry_loads_no_command_line_and_uvicorn_still_works_as_documented() -> None:
    """The streaming function runs uvicorn's `Config` under its `Server`: uvicorn's command line (click, the
    reloader, the multiprocess supervisor) is not loaded, not even by what the server loads as it starts (the
    lifespan, the protocols), and code that imports uvicorn afterwards gets all of it."""
    probe = (
        "import json, sys; import stratus.handlers.streaming; "
        "from stratus.handlers.serving import Config; "
        "Config(lambda scope, receive, send: None, lifespan='on', ws='none').load(); "
        "cli = [name for name in ('click', 'uvicorn.main', 'uvicorn.supervisors', 'multiprocessing') "
        "if name in sys.modules]; "
        "import uvicorn; from uvicorn import Server, run; "
        "print(json.dumps([cli, Server.__module__, run.__module__, uvicorn.main.name, 'click' in sys.modules]))"
    )
    assert _probe(probe) == [[], "uvicorn.server", "uvicorn.main", "main", True]


def test_mangum_is_imported_only_when_an_event_other_than_payload_2_arrives() -> None:
    """The buffered function's front doors (the HTTP API, a Function URL) send payload 2.0, which Stratus reads
    itself; a REST API event still gets Mangum, then."""
    probe = (
        "import json, sys; sys.path.insert(0, 'bench'); import wire, examples.add; "
        "seen = []; seen.append(examples.add.handler(wire.STATELESS_CALL_EVENT, None)['statusCode']); "
        "seen.append('mangum' in sys.modules); "
        "rest = json.load(open('tests/events/rest_api_v1.json')); rest['body'] = wire.STATELESS_CALL_BODY; "
        "rest['headers'].update(wire.STATELESS_HEADERS); rest['multiValueHeaders'] = {}; "
        "seen.append(examples.add.handler(rest, None)['statusCode']); seen.append('mangum' in sys.modules); "
        "print(json.dumps(seen))"
    )
    assert _probe(probe) == [200, False, 200, True]


def test_the_records_a_cold_start_defines_have_no_annotation_to_compile() -> None:
    """`typing.NamedTuple` (3.11 to 3.13) compiles each field's annotation that is a string, as every annotation is
    under `from __future__ import annotations`: about 100 k instructions a field, 12.9 M a cold start over the ~125
    fields of the records the buffered handler defines. Modules that define records write their annotations to be
    evaluated (quoting only the names they import for type checking)."""
    probe = (
        "import json, sys, typing; import stratus.handlers.buffered\n"
        "found = []\n"
        "for module in list(sys.modules.values()):\n"
        "    if not getattr(module, '__name__', '').startswith('stratus'):\n"
        "        continue\n"
        "    for name, value in vars(module).items():\n"
        "        if isinstance(value, type) and issubclass(value, tuple) and value.__module__ == module.__name__:\n"
        "            hints = getattr(value, '__annotations__', {})\n"
        "            found += [f'{module.__name__}.{name}.{field}' for field, hint in hints.items()"
        " if isinstance(hint, typing.ForwardRef)]\n"
        "print(json.dumps(sorted(found)))"
    )
    assert _probe(probe) == []


def test_a_cold_start_builds_only_the_dataclasses_whose_users_need_one() -> None:
    """Each `@dataclass` costs 4-5 M instructions to build at import on 3.13 (docs/benchmarks.md, "Fifth pass"). The
    ones the buffered handler builds are the four whose users rely on `dataclasses.replace` or `fields`; a new one
    on the cold path is a plain or `stratus.frozen.Frozen` class unless it earns its cost."""
    probe = (
        "import json, sys, dataclasses; import stratus.handlers.buffered\n"
        "found = sorted({f'{value.__module__}.{value.__qualname__}' for module in list(sys.modules.values())"
        " if getattr(module, '__name__', '').startswith('stratus')"
        " for value in vars(module).values()"
        " if isinstance(value, type) and dataclasses.is_dataclass(value)"
        " and value.__module__ == module.__name__})\n"
        "print(json.dumps(found))"
    )
    assert _probe(probe) == [
        "stratus.server.context.Context",
        "stratus.settings.Settings",
        "stratus.stores.records.SessionRecord",
        "stratus.stores.records.TaskRecord",
    ]
