"""Lambda's execution model (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html and
https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html), one function at a time:

- each container (execution environment) is its own process group and serves one invocation at a time;
- a new container starts on demand, when every existing one is busy: a real cold start (a new process imports and
  builds everything), up to `max_containers` per function (or the function's reserved concurrency, if lower);
- beyond that a synchronous invocation is throttled (with `--throttle`, or always past a reserved concurrency):
  `ThrottledError`, Lambda's 429 TooManyRequestsException
  (https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html,
  https://docs.aws.amazon.com/lambda/latest/dg/troubleshooting-invocation.html). Lambda does not queue synchronous
  invocations; the emulator waits at most `RELEASE_GRACE_SECONDS` for a container to come free (its own freezing
  and stream bookkeeping come after the caller has its answer, where Lambda's environment is already free), so a
  caller's next request right after its answer is not throttled by the emulator's own overhead. Only
  asynchronous (`Event`) invocations queue without bound, as Lambda's event queue holds them
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html);
- an idle container is frozen (SIGSTOP to its process group; SIGCONT when the next invocation arrives): no code
  runs between invocations, so background tasks do not progress and sockets see no reads;
- which warm container serves an invocation is not up to the caller (a seeded random choice among the idle ones);
- containers are retired at random (killed while frozen, with no warning, as Lambda may do), and a container whose
  invocation timed out or crashed is discarded (Lambda resets the environment).

A `Container` is one execution environment: `HandlerContainer` runs a handler through
`stratus.emulator.runtime`; the Web Adapter's is in `web_adapter`.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import IO, Any

from stratus.emulator.billing import Bill
from stratus.emulator.stack import Function

INIT_TIMEOUT_SECONDS = 10.0
"""Lambda's init phase limit for on-demand functions (lambda-runtime-environment.html, "Init phase")."""
INVOKE_PAYLOAD_BYTES = 6 * 1024 * 1024
"""Synchronous invocation payload, request and response each
(https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)."""
RELEASE_GRACE_SECONDS = 0.25
FREEZE_CHECKS = 400
FREEZE_CHECK_SECONDS = 0.005
_LENGTH = struct.Struct(">I")


class ThrottledError(Exception):
    """No container is free and no other may start: Lambda's 429 TooManyRequestsException."""

    def __init__(self, function: str, reason: str) -> None:
        super().__init__(f"{function}: {reason}")
        self.reason = reason


class ClientGoneError(Exception):
    """The client left while its request waited for a container: it is dropped, never invoked."""


class FunctionError(Exception):
    """The invocation failed: an error the handler raised, a crash, a timeout, or an oversized payload."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type


@dataclass
class Streamed:
    """A streamed HTTP response (the Web Adapter in response_stream mode): its prelude, then its body."""

    status: int
    headers: list[tuple[str, str]]
    chunks: AsyncIterator[bytes]


@dataclass
class Invoked:
    """What one invocation returned: a JSON payload (a buffered handler), or a stream."""

    payload: Any = None
    stream: Streamed | None = None
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))


class Container(ABC):
    """One execution environment: a process group started for it, frozen whenever it is not invoked."""

    process: subprocess.Popen[bytes] | None = None

    def __init__(
        self,
        function: Function,
        environment: Mapping[str, str],
        output: IO[bytes] | None,
        logged: Callable[[bytes], None] | None = None,
    ) -> None:
        self.function = function
        self.environment = dict(environment)
        self.output = output
        self.logged = logged
        """Told each line the process writes (the bill counts what it puts into the function's logs)."""
        self.frozen = False
        self.request_id = ""
        self.init_ms: float | None = None

    @property
    def pid(self) -> int:
        return self.process.pid if self.process else 0

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def spawn(self, command: list[str], environment: Mapping[str, str], pass_fds: tuple[int, ...] = ()) -> None:
        """Start the container's process in a process group of its own (so the whole group can be frozen)."""
        self.process = subprocess.Popen(  # noqa: S603 - the function's own handler, as the template names it
            command,
            cwd=self.function.code_dir,
            env=dict(environment),
            pass_fds=pass_fds,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if self.logged is not None else self.output,
            stderr=subprocess.STDOUT if self.output is not None or self.logged is not None else None,
        )
        if self.logged is not None:
            threading.Thread(target=self._relay, name=f"{self.function.name}-log", daemon=True).start()

    def _relay(self) -> None:
        """Each line the process writes, to `output` (or this process's stdout) and to `logged`, until it ends."""
        assert self.process is not None and self.process.stdout is not None and self.logged is not None
        sink = self.output if self.output is not None else sys.stdout.buffer
        with self.process.stdout as lines, suppress(ValueError, OSError):  # the sink closed as the emulator stopped
            for line in lines:
                sink.write(line)
                sink.flush()
                self.logged(line)

    @abstractmethod
    async def start(self) -> None:
        """The cold start: the process, its init, and (behind the Web Adapter) the readiness check."""

    @abstractmethod
    async def invoke(self, event: Any, context: dict[str, Any]) -> Invoked:
        """One invocation; raises FunctionError when it fails."""

    async def freeze(self) -> None:
        """Stop the process group, and return once its leader has stopped (a signal is delivered asynchronously:
        until then it could still run)."""
        if not self.alive or self.frozen:
            return
        os.killpg(self.pid, signal.SIGSTOP)
        self.frozen = True
        for _ in range(FREEZE_CHECKS):
            with suppress(ChildProcessError):
                # WNOHANG: never blocks; WNOWAIT: leaves the status for Popen.
                if os.waitid(os.P_PID, self.pid, os.WSTOPPED | os.WNOWAIT | os.WNOHANG) is not None:  # noqa: ASYNC222
                    return
            if not self.alive:
                return
            await asyncio.sleep(FREEZE_CHECK_SECONDS)

    def thaw(self) -> None:
        if self.alive and self.frozen:
            os.killpg(self.pid, signal.SIGCONT)
        self.frozen = False

    async def stop(self) -> None:
        """Kill the whole process group, frozen or not (Lambda gives a retired environment no warning)."""
        if self.process is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        await asyncio.to_thread(self.process.wait, 10)


class HandlerContainer(Container):
    """A container running `Handler` (module.attribute) through `stratus.emulator.runtime`."""

    _reader: asyncio.StreamReader
    _writer: asyncio.StreamWriter

    async def start(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            self.spawn(
                [sys.executable, "-m", "stratus.emulator.runtime", str(theirs.fileno())],
                {**self.environment, "_HANDLER": self.function.handler},
                pass_fds=(theirs.fileno(),),
            )
        finally:
            theirs.close()
        self._reader, self._writer = await asyncio.open_unix_connection(sock=ours)
        try:
            async with asyncio.timeout(INIT_TIMEOUT_SECONDS):
                message = await self._read()
        except TimeoutError:
            raise FunctionError("Runtime.InitTimeout", "init did not finish within 10 s") from None
        if not isinstance(message, dict) or not message.get("ready"):
            error = (message or {}).get("initError") or {}
            reason = ": ".join(str(error[key]) for key in ("errorType", "errorMessage") if error.get(key))
            raise FunctionError("Runtime.InitError", reason or "the runtime exited")

    async def invoke(self, event: Any, context: dict[str, Any]) -> Invoked:
        payload = json.dumps(event)
        if len(payload) > INVOKE_PAYLOAD_BYTES:
            raise FunctionError("RequestTooLargeException", "the request payload exceeds 6 MB")
        request = json.dumps({"event": event, "context": context}).encode()
        self._writer.write(_LENGTH.pack(len(request)) + request)
        await self._writer.drain()
        message = await self._read()
        if message is None:
            raise FunctionError("Runtime.ExitError", "the runtime exited during the invocation")
        if "error" in message:
            raise FunctionError(str(message["error"].get("errorType")), str(message["error"].get("errorMessage")))
        return Invoked(payload=message.get("result"))

    async def _read(self) -> Any:
        try:
            header = await self._reader.readexactly(_LENGTH.size)
            body = await self._reader.readexactly(_LENGTH.unpack(header)[0])
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        if len(body) > INVOKE_PAYLOAD_BYTES + 64:
            raise FunctionError("Function.ResponseSizeTooLarge", "the response payload exceeds 6 MB")
        return json.loads(body)

    async def stop(self) -> None:
        if hasattr(self, "_writer"):
            self._writer.close()
        await super().stop()


ContainerFactory = Callable[[Function], Container]


class FunctionPool:
    """The containers of one function: reused warm, started on demand, frozen when idle, retired at random."""

    def __init__(
        self,
        function: Function,
        factory: ContainerFactory,
        *,
        max_containers: int,
        rng: random.Random,
        retire_rate: float,
        bill: Bill | None = None,
        throttle: bool = True,
    ) -> None:
        if max_containers < 1:
            raise ValueError("a function needs at least one container")
        self.function = function
        self._factory = factory
        reserved = function.reserved_concurrency
        self._max = max_containers if reserved is None else min(max_containers, reserved)
        by_reservation = reserved is not None and reserved <= max_containers
        self._throttle_reason = (
            "ReservedFunctionConcurrentInvocationLimitExceeded"
            if by_reservation
            else "ConcurrentInvocationLimitExceeded"
        )
        self._throttles = throttle or by_reservation
        """Whether a synchronous invocation finding no container is refused; else it waits for one."""
        self._bill = bill
        self._rng = rng
        self._retire_rate = retire_rate
        self._idle: list[Container] = []
        self._busy: set[Container] = set()
        self._count = 0
        self._changed = asyncio.Condition()
        self.served: list[int] = []
        """The PID of the container that served each invocation, in order."""
        self.dropped = 0
        """Requests dropped because their client left while they waited for a container."""
        self.cold_starts = 0

    @asynccontextmanager
    async def invocation(
        self, *, queue: bool = False, gone: asyncio.Future[None] | None = None
    ) -> AsyncIterator[Container]:
        """A container for one invocation, thawed; frozen (or retired) again when the block ends. A block left by
        an exception other than a function error discards the container (a timeout resets the environment).
        Raises ThrottledError when no container is free and none may start, unless `queue` (an Event invocation)
        waits for one. The invocation is billed (`billing`) when the block ends: the function's full duration,
        whether or not its caller is still there. A request whose client left (`gone`) while it waited for a container
        is dropped with ClientGoneError: nothing is left to answer."""
        container = await self._acquire_while_wanted(queue, gone)
        loop = asyncio.get_running_loop()
        container.request_id = str(uuid.uuid4())
        container.thaw()
        self.served.append(container.pid)
        started = loop.time()
        keep = False
        try:
            yield container
            keep = True
        except FunctionError:
            keep = True
            raise
        finally:
            if self._bill is not None:
                duration_ms = (loop.time() - started) * 1000
                self._bill.record(
                    self.function.name,
                    self.function.memory_mb,
                    container.request_id,
                    duration_ms,
                    container.pid if container.alive else 0,
                    container.init_ms,
                    self.function.logging,
                )
            container.init_ms = None
            await self._release(container, keep=keep and container.alive)

    @property
    def busy(self) -> int:
        """How many invocations are running now."""
        return len(self._busy)

    def idle_pids(self) -> list[int]:
        """The PIDs of the warm containers waiting, frozen, for an invocation."""
        return [container.pid for container in self._idle if container.frozen]

    def context(self, deadline_seconds: float, request_id: str = "") -> dict[str, Any]:
        """The invocation's context fields (request id, deadline, ARN) for the runtime."""
        return {
            "awsRequestId": request_id or str(uuid.uuid4()),
            "deadlineMs": int((time.time() + deadline_seconds) * 1000),
            "invokedFunctionArn": self.function.arn,
        }

    async def _acquire_while_wanted(self, queue: bool, gone: asyncio.Future[None] | None) -> Container:
        if gone is None:
            return await self._acquire(queue=queue)
        acquiring = asyncio.ensure_future(self._acquire(queue=queue))
        waiting: set[asyncio.Future[Any]] = {acquiring, gone}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if acquiring.done():
            return acquiring.result()
        acquiring.cancel()
        self.dropped += 1
        try:
            container = await acquiring
        except asyncio.CancelledError:
            raise ClientGoneError from None
        await self._release(container, keep=True)  # acquired just as the client left
        raise ClientGoneError

    async def _acquire(self, *, queue: bool) -> Container:
        loop = asyncio.get_running_loop()
        grace_until = loop.time() + RELEASE_GRACE_SECONDS
        async with self._changed:
            while True:
                alive = [container for container in self._idle if container.alive]
                dead = [container for container in self._idle if not container.alive]
                self._count -= len(dead)
                self._idle = alive
                for container in dead:  # a process that ended while idle: its pipe to the emulator is closed too
                    await container.stop()
                if self._idle:
                    container = self._rng.choice(self._idle)
                    self._idle.remove(container)
                    self._busy.add(container)
                    return container
                if self._count < self._max:
                    self._count += 1
                    break
                if queue or not self._throttles:
                    await self._changed.wait()
                    continue
                remaining = grace_until - loop.time()
                if remaining <= 0:
                    raise ThrottledError(self.function.name, self._throttle_reason)
                with suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await self._changed.wait()
        container = self._factory(self.function)
        self._busy.add(container)
        started = loop.time()
        try:
            await container.start()
            container.init_ms = (loop.time() - started) * 1000
        except BaseException:
            self._busy.discard(container)
            await container.stop()
            async with self._changed:
                self._count -= 1
                self._changed.notify()
            raise
        self.cold_starts += 1
        return container

    async def _release(self, container: Container, *, keep: bool) -> None:
        retire = not keep or self._rng.random() < self._retire_rate
        if not retire:
            await container.freeze()
        async with self._changed:
            self._busy.discard(container)
            if retire:
                self._count -= 1
            else:
                self._idle.append(container)
            self._changed.notify()
        if retire:
            await container.stop()

    async def close(self) -> None:
        """Kill every container, idle or busy."""
        async with self._changed:
            containers = [*self._idle, *self._busy]
            self._idle.clear()
            self._busy.clear()
        await asyncio.gather(*(container.stop() for container in containers), return_exceptions=True)
