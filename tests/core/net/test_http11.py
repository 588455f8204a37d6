"""The gateway's HTTP/1.1 client against real servers on 127.0.0.1: a scripted asyncio server for each way a body
can be framed (length, chunks split anywhere, the connection's end), connections kept and reused only when that is
safe, a kept connection the server closed retried once on a new one, an oversized head refused, and uvicorn. What
it writes is checked (no header line can be ended by a value), and with an address guard every new connection is
checked and made to the checked address (servers on 127.0.0.2 stand for allowed addresses, 127.0.0.1 for refused
ones: Linux routes all of 127.0.0.0/8 to lo)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from stratus import Settings, build_app
from stratus.net.addresses import AddressGuard, UpstreamAddressError, parse_allowed_networks
from stratus.net.http11 import Http11Pool, HttpProtocolError, HttpRequestError
from tests.fixtures.addresses import ScriptedResolver, capturing_listener
from tests.fixtures.clocks import FakeClock
from tests.fixtures.sample_server import server as sample
from tests.fixtures.servers import uvicorn_serving
from tests.fixtures.wire import initialize_message

pytestmark = pytest.mark.anyio
Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def scripted(
    answer: Script, *, host: str = "127.0.0.1", port: int = 0, heads: list[bytes] | None = None
) -> AsyncIterator[tuple[str, list[int]]]:
    """A server on `host` that reads each request head (kept in `heads`) and lets `answer` reply; yields its URL
    and the connections made."""
    connections: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        try:
            while not reader.at_eof():
                head = await reader.readuntil(b"\r\n\r\n")
                if heads is not None:
                    heads.append(head)
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                await reader.readexactly(length)
                await answer(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, host, port)
    port = server.sockets[0].getsockname()[1]
    try:
        async with asyncio.timeout(10):
            yield f"http://{host}:{port}/mcp", connections
    finally:
        server.close()
        # Each connection's handler closes its writer once it reads the client's end; waiting for them here keeps a
        # loaded machine from ending the loop first (a writer left open then warns from the garbage collector).
        async with asyncio.timeout(5):
            await server.wait_closed()


async def fetch(pool: Http11Pool, url: str) -> tuple[int, bytes]:
    async with pool.request("POST", url, {"content-type": "application/json"}, b"{}") as response:
        return response.status, await response.read()


async def test_a_sized_body_is_read_and_the_connection_kept_for_the_next_request() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b'HTTP/1.1 200 OK\r\ncontent-length: 7\r\ncontent-type: application/json\r\n\r\n{"a":1}')

    async with scripted(answer) as (url, connections):
        pool = Http11Pool(url)
        assert await fetch(pool, url) == (200, b'{"a":1}')
        assert await fetch(pool, url) == (200, b'{"a":1}')
        await pool.aclose()
    assert len(connections) == 1


async def test_chunks_split_across_writes_are_joined_in_order() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhel")
        await writer.drain()
        writer.write(b"lo\r\n6;ext=1\r\n world\r\n0\r\n\r\n")

    async with scripted(answer) as (url, connections):
        pool = Http11Pool(url)
        assert await fetch(pool, url) == (200, b"hello world")
        assert await fetch(pool, url) == (200, b"hello world")
        await pool.aclose()
    assert len(connections) == 1


async def test_a_body_ended_by_the_connection_is_read_and_the_connection_not_kept() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
        writer.close()

    async with scripted(answer) as (url, connections):
        pool = Http11Pool(url)
        assert await fetch(pool, url) == (200, b"until the end")
        assert await fetch(pool, url) == (200, b"until the end")
        await pool.aclose()
    assert len(connections) == 2


async def test_a_connection_the_server_closed_while_idle_is_replaced_and_the_request_sent_once_more() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()  # keep-alive promised (no "connection: close"), then the server drops it

    async with scripted(answer) as (url, connections):
        pool = Http11Pool(url)
        for _ in range(3):
            assert await fetch(pool, url) == (200, b"ok")
        await pool.aclose()
    assert len(connections) == 3


async def test_an_idle_connection_past_its_time_is_not_reused() -> None:
    clock = FakeClock()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")

    async with scripted(answer) as (url, connections):
        pool = Http11Pool(url, idle_seconds=4, clock=clock)
        await fetch(pool, url)
        clock.advance(5)  # past the 4 s a server's 5 s keep-alive leaves
        await fetch(pool, url)
        await pool.aclose()
    assert len(connections) == 2


async def test_a_body_left_unread_closes_its_connection() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n0123456789")

    async with scripted(answer) as (url, connections):
        pool = Http11Pool(url)
        async with pool.request("POST", url, {}, b"{}") as response:
            assert response.status == 200  # the body is not read: the connection cannot be reused
        assert await fetch(pool, url) == (200, b"0123456789")
        await pool.aclose()
    assert len(connections) == 2


@pytest.mark.parametrize(
    "reply",
    [
        b"SMTP ready\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: lots\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort",
    ],
)
async def test_an_answer_that_is_not_readable_http_is_an_error(reply: bytes) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(reply)
        await writer.drain()
        writer.close()

    async with scripted(answer) as (url, _):
        pool = Http11Pool(url)
        with pytest.raises((HttpProtocolError, asyncio.IncompleteReadError)):
            await fetch(pool, url)
        await pool.aclose()


async def test_a_head_over_the_limit_is_refused_not_buffered() -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nx-padding: " + b"a" * 100_000 + b"\r\n\r\n")

    async with scripted(answer) as (url, _):
        pool = Http11Pool(url)
        with pytest.raises((asyncio.LimitOverrunError, ValueError)):
            await fetch(pool, url)
        await pool.aclose()


@pytest.mark.uvicorn
async def test_uvicorn_answers_json_and_streams_sse_through_it() -> None:
    with uvicorn_serving(build_app(sample, Settings())) as base:
        url = f"{base}/mcp"
        pool = Http11Pool(url)
        body = json.dumps(initialize_message()).encode()
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        async with pool.request("POST", url, headers, body) as response:
            answer = await response.read()
        assert response.status == 200 and b'"protocolVersion":"2025-11-25"' in answer
        async with pool.request("GET", url, {"accept": "text/event-stream"}) as refused:
            await refused.read()
        assert refused.status == 405  # no session: the stream is refused, and the connection goes on
        await pool.aclose()


async def answer_and_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
    await writer.drain()
    writer.close()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("mcp-name", "file:///s3cret\r\nX-Injected: 1"),
        ("authorization", "s3cret\n"),
        ("authorization", "s3cret\rb"),
        ("authorization", "s3cret\x00"),
        ("authorization", "s3cret\x0b"),
        ("authorization", "s3cret\x7f"),
        ("authorization", "s3cret\u2028"),  # not Latin-1: no byte can carry it
        ("x-injected: 1\r\nmcp-name", "s3cret"),
        ("mcp name", "s3cret"),
        ("", "s3cret"),
    ],
)
async def test_a_header_that_would_break_the_request_is_refused_before_anything_is_sent(name: str, value: str) -> None:
    async with scripted(answer_and_close) as (url, connections):
        pool = Http11Pool(url)
        with pytest.raises(HttpRequestError) as refused:
            await fetch_with(pool, url, {name: value})
        assert connections == []  # no connection was even opened
        assert "s3cret" not in str(refused.value)  # a header's value may be a secret: never told
        assert await fetch_with(pool, url, {"mcp-name": "a\tb c"}) == 200  # tabs and inner spaces are fine
        await pool.aclose()


async def fetch_with(pool: Http11Pool, url: str, headers: dict[str, str]) -> int:
    async with pool.request("POST", url, headers, b"{}") as response:
        await response.read()
        return response.status


@pytest.mark.parametrize(
    ("later", "refused"),
    [(["127.0.0.1"], "127.0.0.1"), (["127.0.0.2", "127.0.0.1"], "127.0.0.1")],
    ids=["rebound to loopback", "one of several answers refused"],
)
async def test_each_new_connection_is_checked_and_made_to_the_checked_address(later: list[str], refused: str) -> None:
    heads: list[bytes] = []
    async with capturing_listener("127.0.0.1") as loopback_service:
        port = loopback_service.port  # the refused address's service listens on the upstream's port
        async with scripted(answer_and_close, host="127.0.0.2", port=port, heads=heads) as (_, connections):
            resolver = ScriptedResolver(["127.0.0.2"], later)
            guard = AddressGuard(parse_allowed_networks("127.0.0.2/32"), resolver)
            url = f"http://localhost:{port}/mcp"
            pool = Http11Pool(url, guard=guard)
            assert await fetch_with(pool, url, {"authorization": "Bearer upstream-secret"}) == 200
            with pytest.raises(UpstreamAddressError) as stopped:  # the server closed: a new connection, checked
                await fetch_with(pool, url, {"authorization": "Bearer upstream-secret"})
            await pool.aclose()
    assert connections == [0]  # the first connection went to 127.0.0.2, the one address checked
    assert heads[0].split(b"\r\n")[1] == f"host: localhost:{port}".encode()  # the name stays in the Host header
    assert str(stopped.value.address) == refused
    assert resolver.asked == ["localhost", "localhost"]  # resolved once per connection, by the guard only
    assert loopback_service.received == []  # nothing reached the refused address
