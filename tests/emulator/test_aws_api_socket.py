"""The containers' AWS API endpoint answers without Nagle's algorithm: uvicorn writes an answer's head and body
apart, and with Nagle on, the body waited for the client's delayed ACK of the head (about 40 ms on Linux). Every
DynamoDB call a container made through `stratus local` stalled so, and the bill charged a poll three of them."""

from __future__ import annotations

import asyncio
import socket

import pytest

from stratus.emulator.local_aws import LocalAws, Options
from stratus.emulator.stack import read_stack
from tests.fixtures.emulated_stack import TEMPLATE

pytestmark = pytest.mark.anyio


async def test_each_connection_to_the_aws_api_socket_has_nagle_off() -> None:
    listener = LocalAws(read_stack(TEMPLATE, {}), Options())._spare_socket()
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            connection = transport.get_extra_info("socket")
            accepted.set_result(connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    # As uvicorn serves a socket it is given (`uvicorn.Server.serve(sockets=...)`).
    server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
    async with server:
        port = listener.getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        async with asyncio.timeout(5):
            assert await accepted != 0
        writer.close()
