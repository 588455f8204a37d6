"""What `pip install stratus-mcp` gives a user: one import package, `stratus`, typed, with its console script."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from tests.fixtures.distribution import ROOT, Distribution, FreshVenv

FOLDERS = {"core": "stratus", "handlers": "stratus.handlers", "emulator": "stratus.emulator"}


def _declared() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]  # type: ignore[no-any-return]


def test_the_package_list_names_every_package_folder() -> None:
    """A sub-package under core/, handlers/ or emulator/ left out of pyproject.toml would be missing from the wheel."""
    on_disk = {
        ".".join((name, *init.parent.relative_to(ROOT / folder).parts))
        for folder, name in FOLDERS.items()
        for init in (ROOT / folder).rglob("__init__.py")
    }
    declared = _declared()
    assert sorted(declared["packages"]) == sorted(on_disk)  # type: ignore[call-overload]
    assert declared["package-dir"] == {name: folder for folder, name in FOLDERS.items()}


def test_the_wheel_holds_one_top_level_package_and_its_type_marker(distribution: Distribution) -> None:
    names = zipfile.ZipFile(distribution.wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"stratus", "stratus_mcp-0.1.0.dist-info"}
    assert "stratus/py.typed" in names
    assert "stratus/handlers/buffered.py" in names
    assert "stratus/stores/redis/lua.py" in names
    assert "stratus/emulator/sign_in_provider.mjs" in names  # `stratus local --sign-in`'s provider
    entry_points = zipfile.ZipFile(distribution.wheel).read("stratus_mcp-0.1.0.dist-info/entry_points.txt").decode()
    assert "stratus = stratus.handlers.cli:main" in entry_points


def test_sdist_and_wheel_pass_twine_check(distribution: Distribution) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(distribution.sdist), str(distribution.wheel)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


def test_a_fresh_venv_imports_stratus_and_nothing_else_of_ours(installed: FreshVenv, outside: Path) -> None:
    report = installed.run(
        installed.python,
        "-I",
        "-c",
        "import importlib.util, stratus;"
        "from stratus import McpServer, Context, ToolError, Principal, RateLimit;"
        "print(stratus.__file__);"
        "print([n for n in ('core', 'handlers', 'examples') if importlib.util.find_spec(n)])",
        cwd=outside,
    )
    location, others = report.splitlines()
    assert "site-packages/stratus/__init__.py" in location
    assert others == "[]"
    assert installed.run(installed.bin / "stratus", "--help", cwd=outside).startswith("usage: stratus")


def test_the_installed_wheel_with_no_app_named_stops_with_one_line_naming_stratus_app(
    installed: FreshVenv, outside: Path
) -> None:
    """The demo is not in the wheel: `stratus serve` with no app says which setting names one, not an import error."""
    done = subprocess.run(
        [str(installed.bin / "stratus"), "serve"],
        cwd=outside,
        env=installed.environment(None),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    told = done.stderr.splitlines()
    assert len(told) == 1 and "STRATUS_APP" in told[0], done.stderr
