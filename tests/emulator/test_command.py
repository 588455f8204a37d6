"""`stratus local` as a user runs it: every front door of template.yaml on its own port, printed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import tempfile
import time
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

from tests.fixtures.emulated_stack import HEADERS, VERSION, call_tool, free_ports, initialize
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import ServerUrl, run_stratus, stratus_process

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


async def test_stratus_local_serves_the_buffered_api_and_the_streaming_url() -> None:
    """Both give the official client its progress: through the HTTP API (the buffered function) with the result, in
    one SSE body; through the Function URL (the streaming function behind the Web Adapter) as it happens."""
    environment = {
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"emulator-cli-{uuid.uuid4().hex[:12]}",
    }
    seen: dict[str, list[float]] = {"buffered": [], "streaming": []}
    with tempfile.TemporaryFile() as output:
        command_line = ("local", "--seed", "5", "--retire-rate", "0")
        # `stratus local --port P` serves its doors and Lambda's API on P to P+3 (stratus_process finds four free)
        with stratus_process(
            "tests.fixtures.apps:shared", environment, command_line=command_line, output=output
        ) as url:
            port = int(url.rsplit(":", 1)[1])
            for shape, base in [("buffered", url), ("streaming", f"http://127.0.0.1:{port + 2}")]:

                async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                    seen[shape].append(progress)  # noqa: B023 - called before the loop moves on

                with anyio.fail_after(30):
                    async with Client(f"{base}/mcp", mode="legacy") as client:
                        counted = await client.call_tool("count_to_three", {}, progress_callback=on_progress)
                assert counted.content[0].text == "done"  # type: ignore[union-attr]
        output.seek(0)
        printed = output.read().decode()
    assert seen == {"buffered": [1, 2, 3], "streaming": [1, 2, 3]}
    # A line per request at each front door (what it asked, how it came out, what Lambda billed for it), and the
    # tool's own log line from each shape's container.
    for door in ("ServerlessHttpApi", "StreamingFunctionUrl"):
        assert re.search(rf"(?m)^\[{door}\] POST /mcp 200 \d+ ms tools/call count_to_three ok, billed \d+ ms$", printed)
        assert re.search(
            rf"(?m)^\[{door}\] POST /mcp 202 \d+ ms notifications/initialized accepted, billed \d+ ms$", printed
        )
    assert printed.count('"message":"counting"') == 2, printed[-3000:]
    assert re.search(r"(?m)^Registered \d+ tools \(.*count_to_three.*\), ", printed)  # --app's, under the doors
    for line in [
        f"HTTP API      ServerlessHttpApi        http://127.0.0.1:{port}/mcp",
        f"REST API      StreamingRestApi         http://127.0.0.1:{port + 1}/v1/mcp",
        f"Function URL  StreamingFunctionUrl     http://127.0.0.1:{port + 2}/mcp",
    ]:
        assert line in printed


async def test_stratus_local_with_no_store_named_shares_an_embedded_dynamodb_among_its_containers() -> None:
    """A handshake-era session opened through the HTTP API (the buffered function) is served by both containers of the
    streaming function, and its calls' answers show both did: they share one store, as the deployed stack does."""
    with tempfile.TemporaryFile() as output:
        command_line = ("local", "--seed", "3", "--retire-rate", "0", "--containers", "2")
        with stratus_process("tests.fixtures.emulator_apps:probe", {}, command_line=command_line, output=output) as url:
            streaming = f"http://127.0.0.1:{int(url.rsplit(':', 1)[1]) + 2}/mcp"
            async with httpx.AsyncClient(timeout=20) as http:
                session = await initialize(http, f"{url}/mcp")
                with anyio.fail_after(30):
                    served = await asyncio.gather(
                        *(call_tool(http, streaming, session, "whoami", {}) for _ in range(6))
                    )
        output.seek(0)
        printed = output.read().decode()
    assert len({pid for pid, _ in served}) == 2  # both containers, one session
    assert "store dynamodb://stratus-local" in printed
    # At the default log level the console holds what a developer reads: no access line of the embedded DynamoDB,
    # no SAM translator notice, no EMF document per invocation, no REPORT line of a front door's request, whose
    # billed time is on the door's one line (STRATUS_LOG_LEVEL=DEBUG shows them).
    assert not re.search(r'127\.0\.0\.1 - - \[.*\] "POST /', printed), printed[:2000]
    assert "Feature Toggle" not in printed
    assert '{"_aws"' not in printed
    assert " REPORT RequestId: " not in printed
    assert re.search(
        r"(?m)^\[StreamingFunctionUrl\] POST /mcp 200 \d+ ms tools/call whoami ok, billed \d+ ms$", printed
    )


async def test_stratus_local_remap_www_authenticate_renames_the_challenge_at_every_door() -> None:
    """With the flag, the HTTP API and the Function URL answer a 401's challenge as `x-amzn-Remapped-WWW-Authenticate`,
    as the REST API always does; the body still names the metadata."""
    environment = {
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_STORE": "redis://127.0.0.1:6379/0",
        "STRATUS_STORE_PREFIX": f"emulator-cli-{uuid.uuid4().hex[:12]}",
    }
    first = free_ports(4)
    parameters = {
        "AuthMode": "jwt",
        "AuthIssuer": "https://issuer.example",
        "AuthAudience": f"http://127.0.0.1:{first}/mcp",
        "AuthJwksUrl": "https://issuer.example/jwks.json",
    }
    command_line = ["local", "--retire-rate", "0", "--remap-www-authenticate"]
    for name, value in parameters.items():
        command_line += ["--parameter", f"{name}={value}"]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with stratus_process("tests.fixtures.emulator_apps:probe", environment, command_line=command_line, port=first):
        async with httpx.AsyncClient(timeout=20) as http:
            with anyio.fail_after(30):
                refused = [
                    await http.post(f"http://127.0.0.1:{port}{stage}/mcp", json=ping, headers=HEADERS)
                    for port, stage in [(first, ""), (first + 1, "/v1"), (first + 2, "")]
                ]
    for answer in refused:
        assert answer.status_code == 401
        assert "www-authenticate" not in answer.headers
        pointed = answer.json()["error"]["data"]["resource_metadata"]
        assert answer.headers["x-amzn-remapped-www-authenticate"] == f'Bearer resource_metadata="{pointed}"'


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (the containers `stratus local` started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.anyio(False)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_stopping_stratus_local_leaves_no_container_behind_frozen_or_not(signum: int) -> None:
    command_line = ("local", "--retire-rate", "0", "--containers", "2")
    with stratus_process("tests.fixtures.emulator_apps:probe", {}, command_line=command_line) as url:
        assert isinstance(url, ServerUrl)
        streaming = f"http://127.0.0.1:{int(url.rsplit(':', 1)[1]) + 2}/mcp"
        with httpx.Client(timeout=20) as http:
            for door in (f"{url}/mcp", streaming):  # a container of each shape starts, answers, and is frozen
                assert http.post(door, json=INITIALIZE, headers=HEADERS).status_code == 200
        containers = _children(url.pid)
        assert len(containers) >= 2
        os.kill(url.pid, signum)
        url.process.wait(20)
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in containers) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling other processes' exit, bounded by the deadline
    assert [pid for pid in containers if _running(pid)] == []


@pytest.mark.anyio(False)
def test_a_template_whose_app_the_containers_cannot_import_is_refused_naming_the_flags(tmp_path: Path) -> None:
    """The repository's template names `examples.demo:server`, which only the repository has: copied elsewhere, it is
    refused at start rather than served by containers that all fail to start."""
    template = tmp_path / "template.yaml"
    template.write_text((Path(__file__).parents[2] / "template.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    ran = run_stratus(
        ["local", "--template", str(template), "--store", "memory://"], tmp_path, dropped=("STRATUS_", "PYTHONPATH")
    )
    assert ran.returncode == 2
    assert f"the template's app examples.demo:server cannot be imported from {tmp_path}" in ran.stderr
    assert "No module named 'examples'" in ran.stderr
    assert "pass --app MODULE:ATTR, or --parameter ServerApp=MODULE:ATTR" in ran.stderr


@pytest.mark.anyio(False)
def test_a_template_whose_snapstart_init_would_fail_publication_fails_the_start_with_the_reason() -> None:
    """SnapStart's publish-time init runs when `stratus local` starts: a setting the app's build refuses (the hold
    beyond the streams' cap) fails the start, exit status 1, as it fails the version's publication on AWS."""
    ran = run_stratus(
        ["local", "--store", "memory://", "--parameter", "PollHoldSeconds=900"], Path(__file__).parents[2]
    )
    assert ran.returncode == 1
    assert (
        "stratus: BufferedFunction (stratus-local-BufferedFunction): SnapStart's init at the version's publication"
        in ran.stderr
    )
    assert "STRATUS_POLL_HOLD_SECONDS=900.0: must be 0 or more and below STRATUS_MAX_STREAM_SECONDS" in ran.stderr
