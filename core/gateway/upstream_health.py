"""Each upstream as this container knows it, for `/health`: connection state, last error, tools in the catalog.

Read from memory, never by connecting, so `/health` stays as quick and cheap as without a gateway; bounded, so its
answer stays small.
"""

from __future__ import annotations

from collections.abc import Mapping

from stratus.gateway.pool import UpstreamPool
from stratus.types import JsonObject

HEALTH_UPSTREAMS = 50
"""At most this many upstreams are described on `/health` (the rest are counted), so its answer stays small."""
HEALTH_ERROR_CHARS = 200


def describe_upstreams(pool: UpstreamPool, failures: Mapping[str, str], tool_counts: Mapping[str, int]) -> JsonObject:
    """At most HEALTH_UPSTREAMS upstreams, each error cut to HEALTH_ERROR_CHARS; `failures` are the reasons the
    catalog left upstreams out, `tool_counts` the tools each offers there."""
    upstreams = pool.upstreams
    described: list[JsonObject] = []
    for upstream in upstreams[:HEALTH_UPSTREAMS]:
        error = pool.last_error(upstream.name) or failures.get(upstream.name)
        described.append(
            {
                "name": upstream.name,
                "state": pool.state(upstream.name).value if upstream.active else "inactive",
                "lastError": error[:HEALTH_ERROR_CHARS] if error else None,
                "tools": tool_counts.get(upstream.name, 0),
            }
        )
    report: JsonObject = {"upstreams": described}
    if len(upstreams) > HEALTH_UPSTREAMS:
        report["upstreamsNotShown"] = len(upstreams) - HEALTH_UPSTREAMS
    return report
