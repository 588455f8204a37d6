"""The shared stores the per-backend cold starts run against: the real Redis on 127.0.0.1:6379, and DynamoDB on
moto's server (bench/moto_serve.py, in a process of its own, from the project's venv where moto is a dev
dependency)."""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import measure

BACKEND_SUBJECTS = ("stratus-redis", "stratus-dynamodb")
FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextmanager
def backend_envs() -> Iterator[dict[str, dict[str, str]]]:
    """Environment overrides that point Stratus at each shared store (a fresh key prefix / table per run)."""
    prefix = f"bench-{secrets.token_hex(4)}"
    common = {"STRATUS_SECRET_KEY": secrets.token_hex(32), "STRATUS_STORE_PREFIX": prefix}
    server = subprocess.Popen(
        [sys.executable, str(measure.BENCH / "moto_serve.py"), prefix],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        endpoint = server.stdout.readline().strip()
        if not endpoint.startswith("http://"):
            raise RuntimeError("moto's server did not start (bench/moto_serve.py)")
        yield {
            "stratus-redis": {**common, "STRATUS_STORE": "redis://127.0.0.1:6379/0"},
            "stratus-dynamodb": {
                **common,
                **FAKE_AWS,
                "STRATUS_STORE": f"dynamodb://{prefix}",
                "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
            },
        }
    finally:
        server.stdin.close()
        server.wait(timeout=30)
