"""The runtime inside an emulated Lambda container: import the handler (the init phase), then answer one invocation
at a time, as the Python runtime does against the Runtime API
(https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html): wait for the next event, call the handler with
it and a context, post the result or the error, wait again.

The emulator talks to it over an inherited socket instead of the Runtime API's HTTP: each message is a 4-byte
big-endian length and a JSON document. Between invocations the emulator freezes the whole process.

    python -m stratus.emulator.runtime FD        (the handler is `_HANDLER`, module.attribute)
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import struct
import sys
import time
import traceback
from typing import Any

_LENGTH = struct.Struct(">I")


class LambdaContext:
    """The context object the Python runtime passes to a handler
    (https://docs.aws.amazon.com/lambda/latest/dg/python-context.html)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.aws_request_id: str = fields["awsRequestId"]
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.invoked_function_arn: str = fields["invokedFunctionArn"]
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self._deadline_ms: int = fields["deadlineMs"]

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_ms - int(time.time() * 1000))


def read_message(channel: socket.socket) -> Any:
    """One message, or None when the emulator closed the channel."""
    header = _read_exactly(channel, _LENGTH.size)
    if header is None:
        return None
    body = _read_exactly(channel, _LENGTH.unpack(header)[0])
    return None if body is None else json.loads(body)


def write_message(channel: socket.socket, message: Any) -> None:
    body = json.dumps(message).encode()
    channel.sendall(_LENGTH.pack(len(body)) + body)


def _read_exactly(channel: socket.socket, size: int) -> bytes | None:
    parts = bytearray()
    while len(parts) < size:
        chunk = channel.recv(size - len(parts))
        if not chunk:
            return None
        parts += chunk
    return bytes(parts)


def _error(error: BaseException) -> dict[str, Any]:
    """The error document the runtime posts for a failed init or invocation (its type and message, as the Python
    runtime reports them; the trace goes to the function's log, not to the caller)."""
    traceback.print_exception(error, file=sys.stderr)
    return {"errorType": type(error).__name__, "errorMessage": str(error)}


def _before_snapshot() -> None:
    """The end of a SnapStart init, as a version's publication runs it: the before-snapshot hooks, in the order
    registered (https://docs.aws.amazon.com/lambda/latest/dg/snapstart-runtime-hooks-python.html). A hook that
    raises fails the init, as it fails the publication on AWS. The after-restore hooks belong to the copies restored
    later, which the emulator does not make."""
    import snapshot_restore_py

    for hook, args, kwargs in snapshot_restore_py.get_before_snapshot():
        hook(*args, **kwargs)


def main(fd: int) -> int:
    channel = socket.socket(fileno=fd)
    module_name, _, attribute = os.environ.get("_HANDLER", "").rpartition(".")
    try:
        handler = getattr(importlib.import_module(module_name), attribute)
        if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":
            _before_snapshot()
    except (Exception, SystemExit) as error:  # noqa: BLE001 - an init error is reported, whatever it is
        write_message(channel, {"initError": _error(error)})
        return 1
    write_message(channel, {"ready": True})
    while (invocation := read_message(channel)) is not None:
        try:
            result = handler(invocation["event"], LambdaContext(invocation["context"]))
            write_message(channel, {"result": result})
        except Exception as error:  # noqa: BLE001 - a function error goes back to the caller as Lambda sends it
            write_message(channel, {"error": _error(error)})
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
