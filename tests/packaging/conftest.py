from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.fixtures.distribution import ROOT, Distribution, FreshVenv, build_distribution, fresh_venv


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


@pytest.fixture(scope="session")
def scaffold_tools(installed: FreshVenv) -> FreshVenv:
    """The fresh virtualenv, with what a project made by `stratus init` needs for its own tests."""
    installed.run(
        installed.python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "moto[dynamodb]>=5",
        "boto3",
        cwd=installed.root,
    )
    return installed


@pytest.fixture(scope="session")
def sam_cli() -> Path:
    """The pinned `sam` of scripts/template-tools (installed there once per machine)."""
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "template-tools")], capture_output=True, text=True, timeout=600, check=True
    )
    return Path(done.stdout.strip()) / "bin" / "sam"
