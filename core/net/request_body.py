"""Reading an ASGI request's body: the one reader of the MCP endpoint (core/transport/exchange.py), the authorization
front, the emulator's doors and test servers."""

from __future__ import annotations

from stratus.types import Receive


class BodyTooLargeError(Exception):
    """The body went past the reader's limit; reading stopped there, and the rest of it was not received."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is over {limit} bytes")
        self.limit = limit


async def read_body(receive: Receive, limit: int | None = None) -> bytes:
    """The whole request body, however many messages it arrives in; a client that disconnects ends it.

    Raises:
        BodyTooLargeError: the body went past `limit` bytes (None: no limit, for trusted local servers).
    """
    message = await receive()
    if not message.get("more_body"):  # the whole body in one message, as every Lambda front door sends it
        if message["type"] == "http.disconnect":
            return b""
        body: bytes = message.get("body", b"")
        if limit is not None and len(body) > limit:
            raise BodyTooLargeError(limit)
        return body
    chunks: list[bytes] = []
    size = 0
    while True:
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise BodyTooLargeError(limit)
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)
        message = await receive()
