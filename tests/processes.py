"""Real server processes for tests: `stratus serve` in a subprocess, and a round-robin proxy in front of several."""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import IO

import httpx
import pytest

from core.transport.asgi import Receive, Scope, Send, read_body, until_disconnected

START_TIMEOUT_SECONDS = 20.0
_PLAIN_HTTP = ssl.create_default_context()
"""Shared by the proxy's per-request clients: building an SSL context costs about 16 ms, the rest of a client
almost nothing (the backends are plain HTTP on 127.0.0.1 anyway)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerUrl(str):
    """A server's base URL that also names its process (for tests that watch its memory or file descriptors)."""

    pid: int
    process: subprocess.Popen[bytes]


@contextmanager
def stratus_process(
    app: str,
    environment: dict[str, str],
    *,
    command_line: Sequence[str] = ("serve",),
    port: int | None = None,
    output: IO[bytes] | None = None,
) -> Iterator[str]:
    """`stratus serve --app APP` (or another command line) in its own process on `port` (a free one by default);
    yields its base URL (a `ServerUrl`, with the process's pid), ends it by PID. With `output`, everything the
    process writes (its logs, on stdout and stderr) goes there."""
    port = port or free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STRATUS_")}, **environment}
    command = [sys.executable, "-m", "handlers.cli", *command_line, "--app", app, "--port", str(port)]
    if output is None:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    else:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            if process.poll() is not None:
                pytest.fail(f"stratus serve exited: {process.stderr.read().decode() if process.stderr else ''}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"stratus serve did not listen within {START_TIMEOUT_SECONDS} s")
                time.sleep(0.05)  # polling a process start-up, bounded by the deadline
        url = ServerUrl(f"http://127.0.0.1:{port}")
        url.pid, url.process = process.pid, process
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stderr:
            process.stderr.close()


def shared_store_environment(store: str, request: pytest.FixtureRequest, prefix: str) -> dict[str, str]:
    """STRATUS_* settings for processes sharing the real Redis, or a fresh DynamoDB table on moto's server."""
    if store == "redis":
        return {"STRATUS_STORE": "redis://127.0.0.1:6379/0", "STRATUS_STORE_PREFIX": prefix}
    import boto3

    from core.stores.dynamodb import create_table
    from tests.test_multi_instance import AWS, _keys

    endpoint = request.getfixturevalue("moto_server")
    create_table(boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", **_keys()), prefix)
    return {**AWS, "STRATUS_STORE": f"dynamodb://{prefix}", "AWS_ENDPOINT_URL_DYNAMODB": endpoint}


@contextmanager
def stratus_processes(count: int, app: str, environment: dict[str, str]) -> Iterator[list[str]]:
    with ExitStack() as stack:
        yield [stack.enter_context(stratus_process(app, environment)) for _ in range(count)]


class RoundRobinProxy:
    """An ASGI app forwarding each request to the next backend in turn: no two consecutive requests of a client
    reach the same process."""

    def __init__(self, backends: Sequence[str]) -> None:
        self._next = itertools.cycle(backends)
        self.forwarded: list[str] = []
        self.methods: list[tuple[str, str]] = []
        """(Mcp-Method header, backend) per forwarded request: which process served what."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        backend = next(self._next)
        self.forwarded.append(backend)
        self.methods.append((dict(scope["headers"]).get(b"mcp-method", b"").decode(), backend))
        headers = [
            (k.decode(), v.decode()) for k, v in scope["headers"] if k.lower() not in (b"host", b"content-length")
        ]
        query = scope.get("query_string", b"").decode()
        url = f"{backend}{scope['path']}" + (f"?{query}" if query else "")
        # One client per request (the proxy runs on uvicorn's loop); the response is relayed as it arrives, so
        # an SSE stream whose call waits for the client's reply (sent as another request) flows through.
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(60, connect=5), verify=_PLAIN_HTTP) as client,
            client.stream(scope["method"], url, content=body, headers=headers) as upstream,
        ):
            passed = [
                (name.encode(), value.encode())
                for name, value in upstream.headers.multi_items()
                if name.lower() not in ("content-length", "transfer-encoding")
            ]
            await send({"type": "http.response.start", "status": upstream.status_code, "headers": passed})
            relay = asyncio.ensure_future(self._relay(upstream, send))
            gone = asyncio.ensure_future(until_disconnected(receive))
            # A client that leaves mid-stream closes the upstream stream too, as a real proxy would.
            await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
            for task in (relay, gone):
                task.cancel()
            await asyncio.gather(relay, gone, return_exceptions=True)

    @staticmethod
    async def _relay(upstream: httpx.Response, send: Send) -> None:
        async for chunk in upstream.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
