"""What `stratus serve` shows on its console at the default STRATUS_LOG_LEVEL (INFO): each request's outcome, a
tool's own log lines, a tool's unexpected error with the reference its client got; and a store that fails at start
stops it with one line saying why."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
from typing import Any

import httpx
import pytest

from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.processes import stratus_process
from tests.fixtures.wire import McpHttp

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]
NOISY = "tests.fixtures.apps:noisy"


def _answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer, from a JSON body or the last event of an SSE one (a call that logged streams)."""
    if response.headers["content-type"].startswith("text/event-stream"):
        return dict(json.loads([line[6:] for line in response.text.splitlines() if line.startswith("data: ")][-1]))
    return dict(response.json())


def _printed(output: Any) -> str:
    output.seek(0)
    return str(output.read().decode(errors="replace"))


async def test_the_console_shows_requests_a_tools_log_lines_and_its_error_with_the_reference_the_client_got() -> None:
    with tempfile.TemporaryFile() as output:
        with stratus_process(NOISY, {}, output=output) as url:
            async with httpx.AsyncClient(base_url=url, timeout=10) as http:
                session = await McpHttp(http).initialize()
                said, failed = [
                    _answer(
                        await session.client.post(
                            {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": name}},
                            session.headers,
                        )
                    )
                    for name in ("chatty", "faulty", "refusing")
                ][:2]
        printed = _printed(output)
    assert said["result"]["content"][0]["text"] == "said"
    reference = re.search(r"reference (\w+)", failed["result"]["content"][0]["text"])
    assert reference is not None
    assert "the disk is on fire" not in str(failed)  # the client gets the reference, never the exception's text
    assert '"POST /mcp HTTP/1.1" 200' in printed
    assert "INFO:     stratus.tool: chatty says hi (tool_log={'mood': 'cheerful'})" in printed
    assert f"error_ref={reference.group(1)}" in printed and "RuntimeError: the disk is on fire" in printed
    # one line per call: method, tool, outcome, duration; a tool error's message is logged too
    assert re.search(r"INFO:     stratus\.calls: tools/call chatty: success in \d+\.\d ms", printed), printed
    assert re.search(r"stratus\.calls: tools/call faulty: tool_error in \d+\.\d ms", printed)
    assert "stratus.tool: tool error: the order is closed" in printed


def test_the_console_says_why_the_store_fails_and_serve_stops_before_serving() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]  # nothing listens there once the probe closes
    environment = {
        **{name: value for name, value in os.environ.items() if not name.startswith("STRATUS_")},
        "STRATUS_STORE": f"redis://127.0.0.1:{closed}/0",
        "STRATUS_SECRET_KEY": SECRET_KEY,
        "STRATUS_STORE_TIMEOUT_SECONDS": "5",  # a refused connection fails at once; a loaded machine is slow
    }
    done = subprocess.run(
        [sys.executable, "-m", "stratus.handlers.cli", "serve", "--app", NOISY, "--port", str(closed)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=environment,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"stratus: STRATUS_STORE: Redis at 127.0.0.1:{closed} cannot be reached (ConnectionError): start Redis at "
        f"127.0.0.1:{closed} (e.g. `redis-server --port {closed}`), or point STRATUS_STORE at one that runs"
    ]
