"""Test helpers: an HTTP client for the MCP endpoint that checks every JSON-RPC answer against the official schema."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import jsonschema

SCHEMAS = Path(__file__).parent / "schemas"
MODERN = "2026-07-28"
BASE_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

RESULT_TYPES = {
    "initialize": "InitializeResult",
    "server/discover": "DiscoverResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "completion/complete": "CompleteResult",
    "tasks/get": "GetTaskResult",
    "tasks/result": "GetTaskPayloadResult",
    "tasks/cancel": "CancelTaskResult",
}

# The 2026-07-28 tasks extension (io.modelcontextprotocol/tasks) has no official JSON schema; these are its
# TypeScript definitions (shared/mcp-spec/extensions/tasks) written as JSON Schema.
_TASK_PROPERTIES: dict[str, Any] = {
    "taskId": {"type": "string"},
    "status": {"enum": ["working", "input_required", "completed", "cancelled", "failed"]},
    "statusMessage": {"type": "string"},
    "createdAt": {"type": "string", "format": "date-time"},
    "lastUpdatedAt": {"type": "string", "format": "date-time"},
    "ttlMs": {"type": ["integer", "null"]},
    "pollIntervalMs": {"type": "integer"},
}
_TASK: dict[str, Any] = {
    "type": "object",
    "required": ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs"],
    "allOf": [
        {"if": {"properties": {"status": {"const": "completed"}}}, "then": {"required": ["result"]}},
        {"if": {"properties": {"status": {"const": "failed"}}}, "then": {"required": ["error"]}},
        {"if": {"properties": {"status": {"const": "input_required"}}}, "then": {"required": ["inputRequests"]}},
    ],
}
TASKS_EXTENSION_RESULTS = {
    "CreateTaskResult": {**_TASK, "properties": {**_TASK_PROPERTIES, "resultType": {"const": "task"}}},
    "GetTaskResult": {**_TASK, "properties": {**_TASK_PROPERTIES, "resultType": {"const": "complete"}}},
    "AcknowledgeResult": {"type": "object", "properties": {"resultType": {"const": "complete"}}},
}
_EXTENSION_TYPES = {
    "tasks/get": "GetTaskResult",
    "tasks/update": "AcknowledgeResult",
    "tasks/cancel": "AcknowledgeResult",
}


@cache
def _schema(version: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / version / "schema.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def validate(version: str, definition: str, instance: Any) -> None:
    """Raise jsonschema.ValidationError unless `instance` is a valid `definition` of that protocol version."""
    root = _schema(version)
    defs_key = "$defs" if "$defs" in root else "definitions"
    if definition == "EmptyResult" and definition not in root[defs_key]:
        definition = "Result"
    schema = {**root, "$ref": f"#/{defs_key}/{definition}"}
    jsonschema.validators.validator_for(root)(schema).validate(instance)


def validate_response(version: str, method: str, response: dict[str, Any]) -> None:
    """Check a JSON-RPC response (result or error) to `method` against the version's schema."""
    if "error" in response:
        name = "JSONRPCErrorResponse" if version >= "2025-11-25" else "JSONRPCError"
        validate(version, name, response)
        return
    validate(version, "JSONRPCResponse" if version < "2025-11-25" else "JSONRPCResultResponse", response)
    result = response["result"]
    if result.get("resultType") == "input_required":
        validate(version, "InputRequiredResult", result)
        return
    if version >= MODERN and (method in _EXTENSION_TYPES or result.get("resultType") == "task"):
        definition = _EXTENSION_TYPES.get(method, "CreateTaskResult")
        jsonschema.Draft202012Validator(
            TASKS_EXTENSION_RESULTS[definition], format_checker=jsonschema.FormatChecker()
        ).validate(result)
        return
    if method == "tools/call" and "task" in result:
        validate(version, "CreateTaskResult", result)
        return
    validate(version, RESULT_TYPES[method], result)


def initialize_message(version: str = "2025-11-25", request_id: int = 1) -> dict[str, Any]:
    """A handshake-era `initialize` request declaring no client capabilities."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }


def modern_meta(**extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stratus-tests", "version": "1.0"},
        **extra,
    }


class McpHttp:
    """Speaks to the endpoint the way a conforming client would, and validates what comes back."""

    def __init__(self, client: httpx.AsyncClient, path: str = "/mcp") -> None:
        self.http = client
        self.path = path
        self._next_id = 0

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def post(self, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await self.http.post(self.path, content=content, headers={**BASE_HEADERS, **(headers or {})})

    async def modern(
        self, method: str, params: dict[str, Any] | None = None, *, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        """A 2026-07-28 request with the `_meta` envelope and mirrored headers; a JSON answer is schema-checked."""
        params = {**(params or {})}
        params.setdefault("_meta", modern_meta())
        mirrored = {"mcp-protocol-version": MODERN, "mcp-method": method}
        name = params.get({"resources/read": "uri"}.get(method, "taskId" if method.startswith("tasks/") else "name"))
        if method in ("tools/call", "prompts/get", "resources/read", *_EXTENSION_TYPES) and isinstance(name, str):
            mirrored["mcp-name"] = name
        response = await self.post(
            {"jsonrpc": "2.0", "id": self._id(), "method": method, "params": params}, {**mirrored, **(headers or {})}
        )
        if response.headers.get("content-type", "").startswith("application/json"):
            validate_response(MODERN, method, response.json())
        return response

    async def initialize(self, version: str = "2025-11-25") -> LegacySession:
        """Run the handshake and return the session it opened."""
        response = await self.post(initialize_message(version, self._id()))
        assert response.status_code == 200, response.text
        negotiated = response.json()["result"]["protocolVersion"]
        validate_response(negotiated, "initialize", response.json())
        session = LegacySession(self, response.headers["mcp-session-id"], negotiated)
        assert (await session.notify("notifications/initialized")).status_code == 202
        return session


class LegacySession:
    """A handshake-era session: requests carry its id and the negotiated version header."""

    def __init__(self, client: McpHttp, session_id: str, version: str) -> None:
        self.client = client
        self.session_id = session_id
        self.version = version

    @property
    def headers(self) -> dict[str, str]:
        return {"mcp-session-id": self.session_id, "mcp-protocol-version": self.version}

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": self.client._id(), "method": method, "params": params or {}}
        response = await self.client.post(body, {**self.headers, **(headers or {})})
        if response.status_code == 200:
            validate_response(self.version, method, response.json())
        return response

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> httpx.Response:
        return await self.client.post({"jsonrpc": "2.0", "method": method, "params": params or {}}, self.headers)
