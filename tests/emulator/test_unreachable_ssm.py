"""The stack template.yaml describes, in a VPC without a route to SSM (the containers' SSM endpoint a closed 127.0.0.1
port): both functions start, and every front door answers the same 503 naming STRATUS_SECRET_KEY."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.fixtures.emulated_stack import DOORS, TEMPLATE, serving
from tests.fixtures.lambda_invoke import stateless_request
from tests.fixtures.processes import free_port
from tests.fixtures.wire import BASE_HEADERS

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]


async def test_every_front_door_answers_the_same_503_naming_the_setting_when_ssm_is_out_of_reach() -> None:
    unreachable = {
        "STRATUS_SECRET_KEY": "ssm:/stratus/secret-key",
        "AWS_ENDPOINT_URL_SSM": f"http://127.0.0.1:{free_port()}",
    }
    body, headers = stateless_request("tools/list", {})
    with serving(TEMPLATE, containers=1, environment=unreachable) as aws:
        async with httpx.AsyncClient(timeout=20) as http:
            answers = {
                door: await http.post(f"{aws.url(door)}/mcp", json=body, headers={**BASE_HEADERS, **headers})
                for door in DOORS
            }
    for door, answer in answers.items():
        assert (answer.status_code, answer.headers["retry-after"]) == (503, "5"), door
        assert answer.json() == answers["ServerlessHttpApi"].json(), door
    error = answers["ServerlessHttpApi"].json()["error"]
    assert error["code"] == -31503 and "STRATUS_SECRET_KEY" in error["message"]
    assert "in the shell that runs stratus local" in error["message"]  # the local fix (AWS_SAM_LOCAL), not a VPC's
    assert "/stratus/secret-key" not in json.dumps(error)
