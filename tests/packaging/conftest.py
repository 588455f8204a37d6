from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.distribution import Distribution, FreshVenv, build_distribution, fresh_venv


@pytest.fixture(scope="session")
def distribution(tmp_path_factory: pytest.TempPathFactory) -> Distribution:
    return build_distribution(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="session")
def installed(distribution: Distribution, tmp_path_factory: pytest.TempPathFactory) -> FreshVenv:
    """A fresh virtualenv with the wheel (and the `redis` extra, for the scaffold's Redis option) and pytest."""
    return fresh_venv(tmp_path_factory.mktemp("venv"), f"{distribution.wheel}", "pytest>=8")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the repository, so nothing of the checkout is importable from it."""
    return tmp_path
