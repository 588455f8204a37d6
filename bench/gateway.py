"""Gateway overhead: a tools/call through `stratus serve --gateway` beside the same call made to its upstream.

    .venv/bin/python bench/gateway.py [--calls 500]

Two processes on loopback: the upstream (`stratus serve --app examples.add:server`) and a gateway fronting it, not
namespaced; the client (httpx, in this process) alternates a 2026-07-28 `add` call to each, after a warm-up that
leaves the gateway's pooled connection open, and reports both medians and their difference (the gateway's cost:
one more HTTP hop on loopback plus its own pipeline). Then the upstream is stopped and `tools/list` is asked of the
gateway: answered from the shared cache, it needs no upstream. Prints a summary, then the figures as one Python
literal (what bench/run.py reads). A benchmark: it reports, it never fails on a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stratus_process import serving

from stratus.net.http11 import Http11Pool

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
TARGET_OVERHEAD_MS = 1.0
ADD = {"name": "add", "arguments": {"a": 1, "b": 2}}


def request(method: str, request_id: int, **params: Any) -> tuple[bytes, dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": META}}
    headers = {**HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if "name" in params:
        headers["mcp-name"] = params["name"]
    return json.dumps(body).encode(), headers


class Clients:
    """A keep-alive connection pool per server; the lean client costs the same on both paths and leaves the two
    cores to the servers (a heavier client's CPU, shared with three processes, would inflate the gateway path)."""

    def __init__(self) -> None:
        self.pools: dict[str, Http11Pool] = {}

    async def timed(self, url: str, method: str, request_id: int, **params: Any) -> float:
        pool = self.pools.setdefault(url, Http11Pool(url))
        content, headers = request(method, request_id, **params)
        began = time.perf_counter()
        async with pool.request("POST", url, headers, content) as answer:
            body = await answer.read()
        elapsed = (time.perf_counter() - began) * 1000
        assert answer.status == 200 and "result" in json.loads(body), body
        return elapsed

    async def aclose(self) -> None:
        for pool in self.pools.values():
            await pool.aclose()


async def run(calls: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder, serving("--app", "examples.add:server") as (upstream_base, process):
        upstream = f"{upstream_base}/mcp"
        config = Path(folder) / "gateway.json"
        config.write_text(json.dumps({"mcpServers": {"add": {"url": upstream, "namespaced": False}}}))
        allowed = {"STRATUS_GATEWAY_ALLOWED_NETWORKS": "127.0.0.0/8"}
        with serving("--gateway", str(config), environment=allowed) as (gateway_base, _):
            gateway = f"{gateway_base}/mcp"
            http = Clients()
            try:
                for number in range(max(20, calls // 10)):  # warm-up: connections, the gateway's catalog and pool
                    await http.timed(gateway, "tools/call", number, **ADD)
                    await http.timed(upstream, "tools/call", number, **ADD)
                direct, through = [], []
                for block in range(4):  # blocks in turn: each path warm in its own run, drift shared
                    for number in range(calls // 4):
                        if block % 2:
                            through.append(await http.timed(gateway, "tools/call", number, **ADD))
                        else:
                            direct.append(await http.timed(upstream, "tools/call", number, **ADD))
                lists_direct = [await http.timed(upstream, "tools/list", number) for number in range(calls // 5)]
                process.kill()  # the upstream goes away; the gateway's lists come from the cache
                process.wait(timeout=10)
                lists_cached = [await http.timed(gateway, "tools/list", number) for number in range(calls // 5)]
            finally:
                await http.aclose()
    return {
        "calls": calls,
        "direct_median_ms": statistics.median(direct),
        "gateway_median_ms": statistics.median(through),
        "overhead_median_ms": statistics.median(through) - statistics.median(direct),
        "list_direct_median_ms": statistics.median(lists_direct),
        "list_cached_median_ms": statistics.median(lists_cached),
        "list_cached_without_upstream": 1.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    figures = asyncio.run(run(parser.parse_args().calls))
    print(
        f"tools/call median: direct {figures['direct_median_ms']:.3f} ms, through the gateway "
        f"{figures['gateway_median_ms']:.3f} ms, overhead {figures['overhead_median_ms']:.3f} ms "
        f"(target <= {TARGET_OVERHEAD_MS:.0f} ms); tools/list from the cache with the upstream stopped: "
        f"{figures['list_cached_median_ms']:.3f} ms (direct {figures['list_direct_median_ms']:.3f} ms)",
        file=sys.stderr,
    )
    print(repr(figures))


if __name__ == "__main__":
    main()
