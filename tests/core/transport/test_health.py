"""`/health` reports what the store says, and says so when the store does not answer; `/health/live` never asks it."""

from __future__ import annotations

import socket

import pytest

from core import Settings
from examples.demo import server
from tests.conftest import client_for

pytestmark = pytest.mark.anyio


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_health_counts_sessions_and_names_the_seed_fields() -> None:
    async with client_for(server, Settings(max_sessions=0, session_ttl_seconds=90)) as http:
        empty = (await http.get("/health")).json()
        assert empty["sessions"] == {
            "activeSessions": 0,
            "maxSessions": None,
            "sessionTimeout": 90000,
            "oldestSession": None,
            "newestSession": None,
        }
        await http.post("/session", headers={"content-type": "application/json"})
        sessions = (await http.get("/health")).json()["sessions"]
        assert sessions["activeSessions"] == 1
        assert sessions["oldestSession"] == sessions["newestSession"]
        assert sessions["oldestSession"].endswith("Z") and len(sessions["oldestSession"]) == 24


async def test_an_unreachable_store_makes_health_503_while_liveness_stays_200() -> None:
    settings = Settings(store=f"redis://127.0.0.1:{closed_port()}/0", secret_key="k", store_timeout_seconds=0.5)
    async with client_for(server, settings) as http:
        health = await http.get("/health")
        assert health.status_code == 503
        body = health.json()
        assert (body["status"], body["store"]) == ("unhealthy", {"backend": "redis", "healthy": False})
        assert "Error" not in health.text and "refused" not in health.text
        live = await http.get("/health/live")
        assert (live.status_code, live.json()) == (200, {"status": "ok"})
        assert (await http.post("/health")).status_code == 405
