"""Tools-scaling child of bench/run.py: `python bench/scale_tools.py N CALLS` (the bench venv).

Builds a server of N plain tools (`tool_0` ... `tool_{N-1}`, each `(a: int, b: int) -> int`) behind the buffered
Lambda handler and prints one Python literal: CPU ms to import, build and answer the first tools/list; peak RSS;
warm medians (us) of a tools/call and of a tools/list (its first page) over CALLS calls each.
"""

import json
import statistics
import sys
import time

import wire
from procstat import peak_rss_kib


def main() -> None:
    count, calls = int(sys.argv[1]), int(sys.argv[2])
    cpu0 = time.process_time()
    from stratus import McpServer
    from stratus.handlers.adapter import make_handler

    server = McpServer("scale", "1.0.0")
    for index in range(count):

        def tool(a: int, b: int) -> int:
            return a + b

        server.tool(f"tool_{index}", description=f"Tool number {index}.")(tool)
    handler = make_handler(server)
    meta = wire.STATELESS_CALL_BODY[wire.STATELESS_CALL_BODY.index('"_meta"') : -2]
    list_body = '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{' + meta + "}}"
    list_event = wire.http_api_event(list_body, {**wire.STATELESS_HEADERS, "mcp-method": "tools/list"})
    first = handler(list_event, None)
    cpu_ms = (time.process_time() - cpu0) * 1e3
    listed = json.loads(first["body"])["result"]["tools"]
    call_body = wire.STATELESS_CALL_BODY.replace('"name":"add"', '"name":"tool_0"')
    call_event = wire.http_api_event(call_body, {**wire.STATELESS_HEADERS, "mcp-name": "tool_0"})
    answered = json.loads(handler(call_event, None)["body"])
    assert answered["result"]["structuredContent"] == {"result": 3}, answered

    def median_us(event: dict[str, object]) -> float:
        for _ in range(50):
            handler(event, None)
        samples = []
        for _ in range(calls):
            start = time.perf_counter_ns()
            handler(event, None)
            samples.append((time.perf_counter_ns() - start) / 1e3)
        return statistics.median(samples)

    figures = {
        "tools": count,
        "first_page": len(listed),
        "cold_cpu_ms": cpu_ms,
        "max_rss_mib": peak_rss_kib() / 1024,
        "call_median_us": median_us(call_event),
        "list_median_us": median_us(list_event),
    }
    print(repr(figures))


main()
