"""`stratus init DIR`: the project it writes, its template kept in step with the repository's, and the files it
never overwrites. (tests/packaging/test_scaffold.py runs the project's own tests and `sam build` against the wheel.)"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from stratus.handlers.cli import main
from stratus.handlers.scaffold import ScaffoldError, project_template

ROOT = Path(__file__).parent.parent.parent
FILES = [
    ".gitignore",
    "Makefile",
    "README.md",
    "app.py",
    "pyproject.toml",
    "requirements.txt",
    "run.sh",
    "samconfig.toml",
    "template.yaml",
    "tests/test_app.py",
]


def _files(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())


def test_init_writes_the_project_into_a_new_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "my-server"
    assert main(["init", str(project)]) == 0
    assert _files(project) == FILES
    assert "stratus serve --app app:server" in capsys.readouterr().out
    assert (project / "run.sh").read_bytes() == (ROOT / "run.sh").read_bytes()
    assert os.access(project / "run.sh", os.X_OK)
    # This Stratus is installed from its checkout (`pip install -e .`): the project builds from that checkout.
    from_checkout = f"STRATUS_REQUIREMENT ?= stratus-mcp[redis,jwt,powertools] @ {ROOT.resolve().as_uri()}\n"
    assert from_checkout in (project / "Makefile").read_text()


def test_the_projects_template_is_the_repositorys_with_the_projects_server(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path / "p")]) == 0
    ours = (ROOT / "template.yaml").read_text(encoding="utf-8").splitlines()
    theirs = (tmp_path / "p" / "template.yaml").read_text(encoding="utf-8").splitlines()
    changed = [line for line in difflib.unified_diff(ours, theirs, lineterm="", n=0) if line[:1] in "+-"]
    assert changed[2:] == ["-    Default: examples.demo:server", "+    Default: app:server"]
    assert ours[ours.index("    Default: examples.demo:server") - 2] == "  ServerApp:"


def test_a_folder_that_is_not_empty_is_refused_unless_forced_and_no_file_is_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "app.py").write_text("# mine\n")
    assert main(["init", str(tmp_path)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert _files(tmp_path) == ["app.py"]

    assert main(["init", str(tmp_path), "--force"]) == 0
    assert f"kept    {tmp_path / 'app.py'} (it already exists)" in capsys.readouterr().out
    assert (tmp_path / "app.py").read_text() == "# mine\n"
    assert _files(tmp_path) == FILES


def test_a_file_in_the_way_of_the_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").write_text("")
    assert main(["init", str(tmp_path / "taken")]) == 2
    assert "is not a folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("edit", "old", "new"),
    [
        ("a ServerApp without a default", "    Default: examples.demo:server\n", ""),
        ("a function built another way", "BuildMethod: makefile  # Makefile: build-SweeperFunction", "BuildMethod: x"),
        (
            "a function built from elsewhere",
            "      CodeUri: .\n      Handler: run.sh",
            "      CodeUri: src\n      Handler: run.sh",
        ),
    ],
)
def test_a_repository_template_the_project_cannot_use_is_refused(edit: str, old: str, new: str) -> None:
    template = (ROOT / "template.yaml").read_text(encoding="utf-8")
    assert old in template, edit
    with pytest.raises(ScaffoldError):
        project_template(template.replace(old, new))


def _tree(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*"))


@pytest.mark.parametrize("link", ["tests", "tests/test_app.py", "app.py"])
def test_a_symlink_inside_the_folder_is_refused_naming_it_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], link: str
) -> None:
    """`--force` on a folder with a link (a sub-folder or a file, say to ~/.ssh) writes neither through it nor
    anywhere else: the whole project is refused before its first file."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "notes.txt").write_text("mine\n")
    target = outside if link == "tests" else outside / "victim"
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(target)
    before = _tree(project)

    assert main(["init", str(project), "--force"]) == 2
    err = capsys.readouterr().err
    assert str(project / link) in err and "symbolic link" in err
    assert _tree(outside) == []
    assert _tree(project) == before


def test_the_folder_itself_may_be_reached_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    assert main(["init", str(tmp_path / "alias")]) == 0
    assert _files(tmp_path / "real") == FILES


def test_init_of_the_current_folder_says_what_to_run_without_a_cd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "."]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "Next: stratus serve --app app:server  (README.md says more)"
