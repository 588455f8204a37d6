"""README's table of the defaults Stratus changed from the session REST API's seed: each row's variable restores the
seed's behaviour, and Stratus's own default is what the row says."""

from __future__ import annotations

from pathlib import Path

from stratus import Settings
from stratus.errors import HttpError
from stratus.handlers.cli import serve_port
from stratus.transport.http_guards import HostOriginGuard

README = Path(__file__).parents[2] / "README.md"
SEED_BODY_LIMIT = 10 * 1024 * 1024  # the seed's "10MB" body parser limit


def seed_table() -> dict[str, str]:
    """The table's rows: the seed's default -> the `NAME=VALUE` that restores it."""
    lines = README.read_text().splitlines()
    start = lines.index("| seed default | Stratus default | why | restores the seed's |")
    rows: dict[str, str] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = cells[3].strip("`")
    return rows


def allows(settings: Settings, host: str, origin: str | None = None) -> bool:
    guard = HostOriginGuard(settings.allowed_hosts, settings.allowed_origins)
    headers = {"host": host, **({"origin": origin} if origin else {})}
    try:
        guard.check({"type": "http", "path": "/mcp"}, headers)
    except HttpError:
        return False
    return True


def test_each_deliberate_difference_is_listed_with_the_variable_that_restores_the_seed() -> None:
    rows = seed_table()
    assert len(rows) == 4
    restore = {row.split(" ")[0]: variable.split("=", 1) for row, variable in rows.items()}

    name, value = restore["DNS-rebinding"]
    assert not allows(Settings.from_env({}), "attacker.example")
    assert allows(Settings.from_env({name: value}), "attacker.example")

    name, value = restore["origin"]
    assert not allows(Settings.from_env({}), "localhost", "https://any.example")
    assert allows(Settings.from_env({name: value}), "localhost", "https://any.example")

    name, value = restore["10"]
    assert Settings.from_env({}).max_body_bytes == 4 * 1024 * 1024
    assert Settings.from_env({name: value}).max_body_bytes == SEED_BODY_LIMIT

    name, value = restore["port"]
    assert serve_port(None, {}) == ([], 8000)
    assert serve_port(None, {name: value}) == ([], 3000)
    assert serve_port(8123, {name: value}) == ([], 8123)  # the flag still wins
