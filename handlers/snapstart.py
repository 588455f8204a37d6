"""Lambda SnapStart for the buffered function: prime the app before the snapshot, rebuild it after each restore.

Lambda takes the snapshot after init, so what init imported and built (modules, tool schemas, validators) is
paid once per published version instead of once per cold start. What must not be shared between the copies a
snapshot is restored into is rebuilt after each restore: the app with its store clients (Redis and boto3
connections made before the snapshot are not valid in a copy), its random request-state key, Python's random seed,
and its secrets, read again (a copy may start long after the snapshot, and every copy reading them at once is
throttled and retried as any cold start is: `stratus.handlers.secrets`). Hooks are registered only when Lambda
initialises for a snapshot (`AWS_LAMBDA_INITIALIZATION_TYPE=snap-start`), so an ordinary cold start imports nothing
more.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from typing import Any

from stratus.handlers.adapter import LambdaHandler
from stratus.handlers.secrets import forget_secrets

SNAPSTART_INIT = "snap-start"
PRIMING_HOST = "snapstart.priming.invalid"


def priming_event(mcp_path: str) -> dict[str, Any]:
    """A 2026-07-28 tools/list as an HTTP API (v2) event: it builds every tool's schema before the snapshot."""
    body = {
        "jsonrpc": "2.0",
        "id": "snapstart-priming",
        "method": "tools/list",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "stratus-snapstart", "version": "1"},
            }
        },
    }
    headers = {
        "host": PRIMING_HOST,
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list",
    }
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": mcp_path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "domainName": PRIMING_HOST,
            "http": {"method": "POST", "path": mcp_path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": "snapstart-priming",
            "stage": "$default",
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


class _PrimingContext:
    aws_request_id = "snapstart-priming"
    function_name = "snapstart-priming"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:local:000000000000:function:snapstart-priming"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


class SnapStartHandler:
    """The Lambda handler, delegating to an app it can rebuild after a restore."""

    def __init__(self, build: Callable[[], LambdaHandler], mcp_path: str) -> None:
        self._build = build
        self._mcp_path = mcp_path
        self.current = build()

    def __call__(self, event: dict[str, Any], context: Any) -> Any:
        return self.current(event, context)

    def prime(self) -> None:
        """Before the snapshot: answer a tools/list in-process. A server error fails the snapshot rather than a
        user's call; a refusal (401 where auth is on) still leaves the imports and the app warmed. So does a 503
        (a dependency out of reach, such as SSM in a VPC without a route to it): failing the snapshot would fail
        the deployment, when the function can still serve once the dependency answers."""
        status = self.current(priming_event(self._mcp_path), _PrimingContext()).get("statusCode")
        if not isinstance(status, int) or (status >= 500 and status != 503):
            raise RuntimeError(f"priming tools/list answered {status}")

    def restore(self) -> None:
        """After a restore: a fresh app, fresh store clients and keys, secrets read again, a fresh random seed. The
        old app is dropped, not closed: its connections belong to the snapshot, and closing them would talk over
        dead sockets."""
        random.seed()
        forget_secrets()
        self.current = self._build()


def snapstart_aware(build: Callable[[], LambdaHandler], mcp_path: str) -> LambdaHandler:
    """`build()`, or under SnapStart initialisation a handler whose snapshot hooks prime and rebuild it."""
    if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") != SNAPSTART_INIT:
        return build()
    from snapshot_restore_py import register_after_restore, register_before_snapshot

    handler = SnapStartHandler(build, mcp_path)
    register_before_snapshot(handler.prime)
    register_after_restore(handler.restore)
    return handler
