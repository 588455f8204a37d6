"""README's table of the seeds' features names where each lives: every path it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent
HEADING = "## The seeds, feature by feature"


def _seed_table() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(HEADING) :].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| seed ")]


def test_the_seed_table_covers_all_four_seeds() -> None:
    seeds = {row.split("|")[1].strip() for row in _seed_table() if not row.startswith("| ---")}
    assert seeds - {"beyond the seeds"} == {
        "pipeline (000)",
        "session API (001)",
        "connection pool (002)",
        "aggregation (003)",
    }


def test_every_path_the_seed_table_names_exists() -> None:
    named = {path for row in _seed_table() for path in re.findall(r"`((?:core|handlers|docs)/[^`]*)`", row)}
    assert len(named) > 20
    assert sorted(path for path in named if not (ROOT / path).exists()) == []
