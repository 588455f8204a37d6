"""bench/awslabs_app.py's server with its sessions kept in this process's memory: the counterpart of Stratus on its
memory store in bench/warm_session.py, so both load the caller's session on every call (awslabs's own stores are
DynamoDB and none)."""

import uuid
from typing import Any

from awslabs.mcp_lambda_handler import MCPLambdaHandler
from awslabs.mcp_lambda_handler.session import SessionStore


class MemorySessionStore(SessionStore):  # type: ignore[misc]  # awslabs ships no type hints
    """awslabs's SessionStore interface over a dict."""

    def __init__(self) -> None:
        self.sessions: dict[str, dict[str, Any]] = {}

    def create_session(self, session_data: dict[str, Any] | None = None) -> str:
        session_id = str(uuid.uuid4())
        self.sessions[session_id] = dict(session_data or {})
        return session_id

    def get_session(self, session_id: str) -> dict[str, Any] | None:
        return self.sessions.get(session_id)

    def update_session(self, session_id: str, session_data: dict[str, Any]) -> bool:
        self.sessions[session_id] = dict(session_data)
        return True

    def delete_session(self, session_id: str) -> bool:
        return self.sessions.pop(session_id, None) is not None


mcp = MCPLambdaHandler("add", "1.0.0", session_store=MemorySessionStore())


@mcp.tool()  # type: ignore[untyped-decorator]  # awslabs ships no type hints
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result: dict[str, Any] = mcp.handle_request(event, context)
    return result
