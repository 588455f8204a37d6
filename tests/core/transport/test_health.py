"""`/health` reports what the store says, and says so when the store does not answer; `/health/live` never asks it."""

from __future__ import annotations

import socket

import httpx
import pytest

from stratus import Settings, build_app
from stratus.transport.health import CENSUS_SECONDS
from tests.fixtures.clients import client_for
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.sample_server import server

pytestmark = pytest.mark.anyio


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def client_at(now: list[float], settings: Settings | None = None) -> httpx.AsyncClient:
    """A client of a fresh app whose /health runs on the clock `now[0]`."""
    app = build_app(server, settings or Settings(), monotonic=lambda: now[0])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost")


async def test_health_counts_sessions_and_names_the_seed_fields() -> None:
    now = [100.0]
    async with client_at(now, Settings(max_sessions=0, session_ttl_seconds=90)) as http:
        empty = (await http.get("/health")).json()
        assert empty["sessions"] == {
            "activeSessions": 0,
            "maxSessions": None,
            "sessionTimeout": 90000,
            "oldestSession": None,
            "newestSession": None,
        }
        await http.post("/session", headers={"content-type": "application/json"})
        now[0] += CENSUS_SECONDS
        sessions = (await http.get("/health")).json()["sessions"]
        assert sessions["activeSessions"] == 1
        assert sessions["oldestSession"] == sessions["newestSession"]
        assert sessions["oldestSession"].endswith("Z") and len(sessions["oldestSession"]) == 24


async def test_one_census_answers_every_health_request_for_five_seconds() -> None:
    """A flood of /health asks the store once per interval per process; the figures are at most that old."""
    now = [100.0]
    async with client_at(now) as http:
        assert CENSUS_SECONDS == 5.0
        assert (await http.get("/health")).json()["sessions"]["activeSessions"] == 0
        assert (await http.post("/session", headers={"content-type": "application/json"})).status_code == 200
        now[0] += CENSUS_SECONDS - 0.1
        for _ in range(20):
            report = (await http.get("/health")).json()
            assert report["sessions"]["activeSessions"] == 0  # the first census, not a new one
        assert report["uptime"] == 4  # uptime is the process's own: always current
        now[0] += 0.1
        assert (await http.get("/health")).json()["sessions"]["activeSessions"] == 1


async def test_health_refuses_a_host_or_origin_this_server_does_not_serve() -> None:
    """/health shows session figures: a rebound page (the attacker's Host) must not read them."""
    async with client_for(server) as http:
        await http.post("/session", headers={"content-type": "application/json"})
        rebound = await http.get("/health", headers={"host": "rebound.attacker.example"})
        assert rebound.status_code == 421
        assert "sessions" not in rebound.text and "activeSessions" not in rebound.text
        assert rebound.json() == {
            "error": "Misdirected request: this server does not serve that Host; to serve it, add it to "
            "STRATUS_ALLOWED_HOSTS"
        }
        foreign = await http.get("/health", headers={"origin": "https://evil.example.com"})
        assert (foreign.status_code, "sessions" in foreign.text) == (403, False)
        assert "access-control-allow-origin" not in foreign.headers
        assert (await http.get("/health", headers={"host": "localhost:8000"})).status_code == 200
        assert (await http.get("/health/live", headers={"host": "10.0.3.7:8000"})).status_code == 200


async def test_an_unreachable_store_makes_health_503_naming_the_check_while_liveness_stays_200(
    caplog: pytest.LogCaptureFixture,
) -> None:
    port = closed_port()
    settings = Settings(store=f"redis://127.0.0.1:{port}/0", secret_key=SECRET_KEY, store_timeout_seconds=0.5)
    async with client_for(server, settings) as http:
        health = await http.get("/health")
        assert health.status_code == 503
        body = health.json()
        assert (body["status"], body["failed"]) == ("unhealthy", "store")
        assert body["store"] == {"backend": "redis", "healthy": False}
        assert "Error" not in health.text and "refused" not in health.text and str(port) not in health.text
        # the operator's log says why, and what to do
        assert f"start Redis at 127.0.0.1:{port}" in caplog.text and "ConnectionError" in caplog.text
        live = await http.get("/health/live")
        assert (live.status_code, live.json()) == (200, {"status": "ok"})
        assert (await http.post("/health")).status_code == 405
