"""MCP's stdio transport, as a client: the upstream is a process the gateway starts, one JSON message a line.

The process gets a minimal inherited environment (PATH, HOME, locale and the like, never the gateway's own
credentials) plus the upstream's configured `env`, whose values are already resolved. Its standard output is
read by one task that sorts every message to the request it is about (`Demux`); its standard error is drained
to the `stratus.gateway` logger at debug level so it can never fill the pipe. A line longer than the bound is
an error that ends the transport (the stream cannot be resynchronised), not a hang. When the process exits,
every waiting request and every later one fails with `UpstreamUnavailableError`. `close` closes the process's
standard input, waits a bounded time for it to exit, then terminates it, then kills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator

from stratus.errors import UnencodableTextError
from stratus.gateway.connectors.contract import UpstreamUnavailableError
from stratus.gateway.connectors.event_stream import json_object
from stratus.gateway.demux import Demux
from stratus.types import JsonObject

MAX_LINE_BYTES = 16 * 1024 * 1024
EXIT_SECONDS = 2.0
"""How long the process gets to exit at each step of `close` (stdin closed, then terminated, then killed)."""
EXIT_CODE_SECONDS = 1.0
"""How long to wait for the exit code of a process whose output ended, to name it in the failure."""
CHUNK_BYTES = 64 * 1024
_WINDOWS_ENV = ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT", "PROCESSOR_ARCHITECTURE")
_POSIX_ENV = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER")
INHERITED_ENV = (
    (*_WINDOWS_ENV, "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR")
    if sys.platform == "win32"
    else _POSIX_ENV
)
"""The variables a started upstream inherits from the gateway; everything else it gets is configured."""

logger = logging.getLogger("stratus.gateway")


def upstream_environment(configured: dict[str, str]) -> dict[str, str]:
    """The environment of a started upstream: the inherited basics (shell functions left out), then `configured`."""
    inherited = {name: value for name in INHERITED_ENV if (value := os.environ.get(name)) and "()" not in value[:2]}
    return {**inherited, **configured}


class StdioTransport:
    """One upstream process, started by `open` and ended by `close`."""

    def __init__(
        self,
        command: str,
        args: tuple[str, ...] | list[str],
        env: dict[str, str],
        *,
        timeout: float,
        max_line_bytes: int = MAX_LINE_BYTES,
        serialize_calls: bool = True,
    ) -> None:
        self.command = command
        self.args = tuple(args)
        self.env = env
        self.protocol_version: str | None = None
        self.timeout = timeout
        self.max_line_bytes = max_line_bytes
        self.process: asyncio.subprocess.Process | None = None
        self._demux = Demux(serialize_calls=serialize_calls)
        self._tasks: list[asyncio.Task[None]] = []
        self._opening = asyncio.Lock()
        self._writing = asyncio.Lock()

    async def open(self) -> None:
        async with self._opening:
            self._demux.raise_if_ended()
            if self.process is None:
                self.process = await self._start()
                self._tasks = [
                    asyncio.create_task(self._read(self.process), name=f"stdio-read-{self.process.pid}"),
                    asyncio.create_task(_drain(self.process, self.command), name=f"stdio-err-{self.process.pid}"),
                ]

    async def _start(self) -> asyncio.subprocess.Process:
        try:
            return await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=upstream_environment(self.env),
                limit=self.max_line_bytes,
            )
        except (OSError, ValueError) as error:
            raise UpstreamUnavailableError(f"could not be started: {type(error).__name__}") from None

    def notifications(self) -> AsyncIterator[JsonObject]:
        """The upstream's list changes, until the stream ends."""
        return self._demux.changes()

    def exchange(self, message: JsonObject) -> AsyncGenerator[JsonObject, None]:
        return self._demux.exchange(message, self._write)

    async def send(self, message: JsonObject) -> None:
        await self._write(message)

    async def close(self) -> None:
        process, tasks = self.process, self._tasks
        self._demux.fail("was closed")
        if process is None:
            return
        try:
            await _stop(process)
        finally:
            _, running = await asyncio.wait(tasks, timeout=EXIT_SECONDS)
            for task in running:  # a grandchild still holds the pipes open
                task.cancel()

    async def _write(self, message: JsonObject) -> None:
        self._demux.raise_if_ended()
        process = self.process
        if process is None or process.stdin is None:
            raise UpstreamUnavailableError("is not running")
        try:
            line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        except UnicodeEncodeError:
            raise UnencodableTextError("the request") from None
        async with self._writing:
            try:
                process.stdin.write(line)
                async with asyncio.timeout(self.timeout):
                    await process.stdin.drain()
            except TimeoutError:
                raise UpstreamUnavailableError(f"did not read its input within {self.timeout:g} s") from None
            except (OSError, RuntimeError):
                raise UpstreamUnavailableError("exited (its input is closed)") from None

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        """Sort every line the process writes to the request it is about, until its output ends."""
        assert process.stdout is not None
        stdout = process.stdout
        reason: str | None = None
        try:
            while line := await stdout.readline():  # ends with the process's output
                message = json_object(line)
                if message is None:
                    logger.debug("upstream wrote a line that is not JSON", extra={"gateway_command": self.command})
                elif (reply := self._demux.route(message)) is not None:
                    await self._reply(reply)
        except ValueError:  # the line outgrew the reader's limit: the stream cannot be resynchronised
            reason = f"sent a message over {self.max_line_bytes} bytes"
            self._demux.fail(reason)
            while await stdout.read(CHUNK_BYTES):  # let it write on until `close` ends it
                pass
        except OSError as error:
            reason = f"could not be read: {type(error).__name__}"
        finally:
            if not self._demux.ended:
                self._demux.fail(reason or await _exit_reason(process))

    async def _reply(self, reply: JsonObject) -> None:
        try:
            await self._write(reply)
        except UpstreamUnavailableError:
            logger.debug("upstream could not be answered", extra={"gateway_command": self.command})


async def _drain(process: asyncio.subprocess.Process, command: str) -> None:
    """Log what the process writes to its standard error (debug level), so the pipe never fills."""
    assert process.stderr is not None
    while chunk := await process.stderr.read(CHUNK_BYTES):  # ends with the process's error output
        text = chunk.decode("utf-8", "replace").rstrip()
        logger.debug("upstream stderr", extra={"gateway_command": command, "gateway_stderr": text})


async def _exit_reason(process: asyncio.subprocess.Process) -> str:
    try:
        async with asyncio.timeout(EXIT_CODE_SECONDS):
            code = await process.wait()
    except TimeoutError:
        return "exited (closed its output)"
    return f"exited (exit code {code})"


async def _stop(process: asyncio.subprocess.Process) -> None:
    """End the process: stdin closed, then terminate, then kill, each given EXIT_SECONDS; killed if cancelled."""
    try:
        if process.stdin is not None:
            process.stdin.close()
        for step in (None, process.terminate, process.kill):
            if process.returncode is not None:
                return
            if step is not None:
                try:
                    step()
                except ProcessLookupError:
                    return
            try:
                async with asyncio.timeout(EXIT_SECONDS):
                    await process.wait()
                return
            except TimeoutError:
                continue
        logger.warning("upstream process did not exit when killed", extra={"gateway_pid": process.pid})
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
