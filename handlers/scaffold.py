"""`stratus init DIR`: a new project serving the user's own server with Stratus, deployable with `sam deploy`.

The project's files are package data (handlers/project-template/). Two of them are the repository's own files,
linked there rather than copied, so a release ships whatever they say:

- `run.sh`, the streaming function's entry, as it is;
- `template.yaml`, with one change made here: the `ServerApp` parameter's default names the project's server
  (`app:server`) instead of the repository's demo. Everything else, both shapes, their front doors and every
  option, is the repository's template. Its functions build with `BuildMethod: makefile` from `CodeUri: .`,
  which in the project means the project's own Makefile (`build-%`, so any function the template adds: Stratus
  from PyPI, requirements.txt, the project's modules). A repository template that stops fitting (no `ServerApp`
  default, a function built another way) is refused rather than shipped half-changed; tests/handlers/
  test_scaffold.py runs the change on the repository's template.yaml, so CI fails when that happens.

The Makefile's Stratus requirement is pinned to the version running `stratus init`, the one whose template the
project received.

Nothing is written through a symbolic link inside the project's folder (the folder itself may be reached through
one): a link where a file or one of its folders would go (`tests` -> ~/.ssh, say) refuses the whole project before
its first file, naming the link, and each file is then created through folders opened without following links,
so a link made meanwhile is refused too rather than followed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from stratus.version import __version__

SERVER_APP = "app:server"
"""The project's server, as `module:attribute`: `app.py`'s `server`."""

_RENAMED = {"gitignore": ".gitignore"}
"""Files stored under another name: a dotfile is not package data."""

_EXECUTABLE = {"run.sh"}

_FUNCTION = re.compile(r"(?m)^    Type: AWS::Serverless::Function$")
_MAKEFILE_BUILD = re.compile(r"(?m)^      BuildMethod: makefile\b")
_CODE_URI = re.compile(r"(?m)^      CodeUri: \.$")
_SERVER_APP_DEFAULT = re.compile(r"(?m)^(  ServerApp:\n(?:    .*\n)*?    Default: )(\S+)$")


class ScaffoldError(Exception):
    """The project cannot be created as asked; the message says why and what to do."""


@dataclass
class Created:
    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    """Files that already existed and were left as they were."""


def project_template(template: str) -> str:
    """The project's template.yaml: the repository's, with `ServerApp` defaulting to the project's server.

    Raises ScaffoldError when the repository's template no longer fits the project: a function that does not build
    with `make` from the project's root, or no `ServerApp` default to change.
    """
    functions = len(_FUNCTION.findall(template))
    if (
        not functions
        or functions != len(_MAKEFILE_BUILD.findall(template))
        or functions != len(_CODE_URI.findall(template))
    ):
        raise ScaffoldError("every function of template.yaml must build with `BuildMethod: makefile` from `CodeUri: .`")
    changed, count = _SERVER_APP_DEFAULT.subn(lambda match: match.group(1) + SERVER_APP, template, count=1)
    if count != 1:
        raise ScaffoldError("template.yaml has no ServerApp parameter with a Default to point at the project's server")
    return changed


def _render(name: str, text: str) -> str:
    if name == "template.yaml":
        return project_template(text)
    if name == "Makefile":
        return text.replace("@STRATUS_VERSION@", __version__)
    return text


def _files(folder: Traversable, prefix: Path = Path()) -> list[tuple[Path, Traversable]]:
    found: list[tuple[Path, Traversable]] = []
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            found.extend(_files(entry, prefix / entry.name))
        else:
            found.append((prefix / _RENAMED.get(entry.name, entry.name), entry))
    return found


def _link_refused(link: Path) -> ScaffoldError:
    return ScaffoldError(
        f"{link} is a symbolic link: stratus init never writes through one inside the project's folder (it could "
        "write outside it); nothing was written. Remove the link, or create the project in another folder"
    )


def _first_link(target: Path, files: Iterable[Path]) -> Path | None:
    """The first symbolic link beneath `target` on the way to any of `files` (the file itself included)."""
    for relative in files:
        path = target
        for part in relative.parts:
            path = path / part
            if path.is_symlink():
                return path
            if not path.exists():
                break
    return None


def _create(target: Path, relative: Path, text: str, *, executable: bool) -> bool:
    """Create `relative` beneath `target` with `text`; False when a file is already there (never replaced).

    Each folder on the way is opened without following a link, and the file is created exclusively without
    following one, so nothing lands outside `target` even if a link appears after `_first_link` looked.

    Raises:
        ScaffoldError: a symbolic link, or a file, stands where a folder of `relative` goes.
    """
    folder = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for depth, part in enumerate(relative.parts[:-1], start=1):
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=folder)
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            except NotADirectoryError:
                there = target.joinpath(*relative.parts[:depth])
                raise ScaffoldError(f"{there} is a file where the project needs a folder; move it away") from None
            except OSError:  # ELOOP: a symbolic link
                raise _link_refused(target.joinpath(*relative.parts[:depth])) from None
            os.close(folder)
            folder = inner
        try:
            descriptor = os.open(
                relative.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=folder
            )
        except FileExistsError:  # a file, or a link, appeared meanwhile: kept, never written through
            return False
    finally:
        os.close(folder)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        if executable:
            os.fchmod(out.fileno(), 0o755)
        out.write(text)
    return True


def init_project(target: Path, *, force: bool = False) -> Created:
    """Write the project's files into `target` (created if missing).

    A folder that already holds anything is refused unless `force`; even then an existing file is never
    overwritten, only reported as kept.

    Raises:
        ScaffoldError: `target` is not a folder, is not empty without `force`, or holds a symbolic link where a
            file of the project or one of its folders goes (nothing is written then).
    """
    if target.exists() and not target.is_dir():
        raise ScaffoldError(f"{target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise ScaffoldError(f"{target} is not empty; pass --force to add the missing files (none is overwritten)")
    files = _files(resources.files("stratus.handlers") / "project-template")
    link = _first_link(target, (relative for relative, _ in files))
    if link is not None:
        raise _link_refused(link)
    target.mkdir(parents=True, exist_ok=True)
    created = Created()
    for relative, source in files:
        if (target / relative).exists():
            created.kept.append(relative)
            continue
        text = _render(relative.as_posix(), source.read_text(encoding="utf-8"))
        if _create(target, relative, text, executable=relative.name in _EXECUTABLE):
            created.written.append(relative)
        else:
            created.kept.append(relative)
    return created


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    init = commands.add_parser("init", help="create a project for your own server: app, tests, SAM template, build")
    init.add_argument("directory", type=Path, help="the project's folder (created if missing)")
    init.add_argument(
        "--force", action="store_true", help="add the missing files to a folder that is not empty (overwrites none)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        created = init_project(args.directory, force=args.force)
    except ScaffoldError as exc:
        print(f"stratus: {exc}", file=sys.stderr)
        return 2
    for relative in created.written:
        print(f"created {args.directory / relative}")
    for relative in created.kept:
        print(f"kept    {args.directory / relative} (it already exists)")
    print(f"\nNext: cd {args.directory} && stratus serve --app {SERVER_APP}  (README.md says more)")
    return 0
