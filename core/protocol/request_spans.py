"""What a request's server span says, as OpenTelemetry's MCP semantic conventions have it
(https://github.com/open-telemetry/semantic-conventions-genai/blob/main/docs/gen-ai/mcp.md, status Development):

- name `{mcp.method.name} {target}`, the target the tool's or prompt's name (a resource's URI stays out of the name:
  high cardinality);
- `mcp.method.name`, `jsonrpc.request.id`, `mcp.protocol.version`, `gen_ai.tool.name` with `gen_ai.operation.name`
  `execute_tool`, `gen_ai.prompt.name`, `mcp.resource.uri`, `network.transport`, `network.protocol.name`;
- `mcp.session.id` as the first 16 hex digits of the session id's SHA-256: it correlates a session's spans without
  putting the id, which lets its holder act in the session, into a trace store;
- on failure `error.type` (the JSON-RPC code, or `tool_error` for a result with `isError`) and the status.

No argument value, token or header is ever an attribute: the parent comes from `params._meta` (or the headers) as
the W3C trace context alone.

Without a `traceparent` header, the request's X-Ray trace header is the transport's context: `X-Amzn-Trace-Id` as
API Gateway passes it on, else Lambda's `_X_AMZN_TRACE_ID` for the invocation
(https://docs.aws.amazon.com/xray/latest/devguide/xray-concepts.html#xray-concepts-tracingheader). Only a sampled one
(`Sampled=1`) is: with `Tracing=PassThrough` Lambda makes an unsampled header for every request, whose parent segment
is never recorded, and continuing it would leave every span unsampled.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping

from stratus.protocol.call import Call
from stratus.tracing import TRACE_CONTEXT_KEYS

_XRAY_HEADER = re.compile(r"^Root=1-([0-9a-f]{8})-([0-9a-f]{24});Parent=([0-9a-f]{16});Sampled=1(?:;|$)")
_NAMED = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_RESOURCE_METHODS = ("resources/read", "resources/subscribe", "resources/unsubscribe")


def span_name(call: Call) -> str:
    target = call.params.get("name") if call.request.method in _NAMED else None
    return f"{call.request.method} {target}" if isinstance(target, str) and target else call.request.method


def span_attributes(call: Call) -> dict[str, str]:
    method = call.request.method
    attributes = {"mcp.method.name": method, "mcp.protocol.version": call.version}
    if call.request.id is not None:
        attributes["jsonrpc.request.id"] = str(call.request.id)
    if call.session is not None:
        attributes["mcp.session.id"] = hashlib.sha256(call.session.session_id.encode()).hexdigest()[:16]
    named = call.params.get("name")
    if method in _NAMED and isinstance(named, str):
        attributes[_NAMED[method]] = named
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    uri = call.params.get("uri")
    if method in _RESOURCE_METHODS and isinstance(uri, str):
        attributes["mcp.resource.uri"] = uri
    if call.http is not None:
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
    return attributes


def trace_context(values: object) -> dict[str, str]:
    """The W3C trace context among `values` (a `_meta` object, or headers), nothing else."""
    if not isinstance(values, Mapping):
        return {}
    return {key: value for key in TRACE_CONTEXT_KEYS if isinstance(value := values.get(key), str)}


def parent_context(call: Call) -> dict[str, str]:
    return trace_context(call.params.get("_meta"))


def transport_context(call: Call) -> dict[str, str]:
    headers: Mapping[str, str] = call.http.headers if call.http is not None else {}
    carried = trace_context(headers)
    if "traceparent" in carried:
        return carried
    xray = xray_trace_context(headers.get("x-amzn-trace-id") or os.environ.get("_X_AMZN_TRACE_ID", ""))
    return xray or carried


def xray_trace_context(header: str) -> dict[str, str]:
    """A sampled X-Ray trace header (`Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=1`) as a W3C `traceparent`;
    {} for any other."""
    matched = _XRAY_HEADER.match(header.strip())
    if matched is None:
        return {}
    epoch, unique, parent = matched.groups()
    return {"traceparent": f"00-{epoch}{unique}-{parent}-01"}
