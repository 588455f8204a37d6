"""A redis-server of a test's own: its own port, no persistence, stopped and started at will (fault tests)."""

from __future__ import annotations

import shutil
import subprocess

import anyio
import redis

from tests.processes import free_port


class OwnRedis:
    """A redis-server this test starts on its own port, and stops and restarts at will."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed (.ci/run installs it)"
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        with anyio.from_thread.start_blocking_portal() as portal:
            portal.call(self._wait_until_up)

    async def _wait_until_up(self) -> None:
        with anyio.fail_after(10):
            while True:
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", self.port)
                    await stream.aclose()
                    return
                except OSError:
                    await anyio.sleep(0.02)  # polling a process start-up, bounded by fail_after above

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def client(self) -> redis.Redis:
        """A plain client of this server (for breaking it: FLUSHALL, CLIENT PAUSE)."""
        return redis.Redis(port=self.port)
