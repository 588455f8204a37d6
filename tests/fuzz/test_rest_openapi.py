"""schemathesis against docs/openapi.yaml: every operation of the seed REST API, with generated (and mutated)
requests, must answer as the description says, with no server error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from stratus import Settings, build_app
from tests.fixtures.fuzzing import EXAMPLES
from tests.fixtures.sample_server import server
from tests.fixtures.servers import uvicorn_serving

SCHEMA = schemathesis.openapi.from_path(Path(__file__).parents[2] / "docs" / "openapi.yaml")


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with uvicorn_serving(build_app(server, Settings(max_sessions=0))) as url:
        yield url


# A live session's event stream never ends on its own, so the stream itself is left to tests/test_session_api.py.
@SCHEMA.exclude(path="/events/{sessionId}").parametrize()
@settings(max_examples=max(10, EXAMPLES // 5), deadline=None, suppress_health_check=list(HealthCheck))
def test_the_rest_api_answers_as_its_openapi_description_says(case: schemathesis.Case[Any], base_url: str) -> None:
    response = case.call(base_url=base_url, timeout=10)
    case.validate_response(response)


@pytest.mark.parametrize("body", [{"method": "tools/list"}, {"method": "tools/call", "params": {"name": "add"}}])
def test_a_rest_call_without_session_id_gets_the_documented_rest_answer(base_url: str, body: dict[str, Any]) -> None:
    case = SCHEMA["/mcp"]["POST"].Case(body=body, media_type="application/json")
    response = case.call(base_url=base_url, timeout=10)
    case.validate_response(response)
    assert response.status_code == 400
    assert response.json()["sessionId"] is None
    assert response.json()["error"]["message"].startswith("Bad Request: sessionId is required")
