"""`stratus init DIR`: a new project serving the user's own server with Stratus, deployable with `sam deploy`.

The project's files are package data (handlers/project-template/). Two of them are the repository's own files,
linked there rather than copied, so a release ships whatever they say:

- `run.sh`, the streaming function's entry, as it is;
- `template.yaml`, with one change made here: the `ServerApp` parameter's default names the project's server
  (`app:server`) instead of the repository's demo. Everything else, both shapes, their front doors and every
  option, is the repository's template. Its functions build with `BuildMethod: makefile` from `CodeUri: .`,
  which in the project means the project's own Makefile (`build-%`, so any function the template adds: Stratus
  as `STRATUS_REQUIREMENT` names it, requirements.txt, the project's modules). A repository template that stops
  fitting (no `ServerApp` default, a function built another way) is refused rather than shipped half-changed;
  tests/handlers/test_scaffold.py runs the change on the repository's template.yaml, so CI fails when that happens.

The Makefile's Stratus requirement is the Stratus running `stratus init`, the one whose template the project
received, found as pip installed it (its PEP 610 `direct_url.json`, see `stratus_source`):

- from the package index (no record): `stratus-mcp[...]==<version>`;
- from a wheel file: that wheel, copied into the project's `vendor/` and required from there, so the project builds
  on any machine (a colleague's, CI) and after the wheel's folder is gone, with no absolute path of this one;
- from a checkout (`pip install .` or `-e .`): the checkout, by its `file://` URL, so a build packs what the
  checkout holds then; on this machine only, and one function at a time (`parallel = false` in samconfig.toml:
  pip builds a checkout in its own build/ folder);
- from a URL or a VCS: that URL (a VCS at the commit installed).

`samconfig.toml` is the project's answers to `sam build` and `sam deploy`: the stack is named after the project's
folder, as is the SSM parameter holding its secret key (`/<stack>/secret-key`).

Nothing is written through a symbolic link inside the project's folder (the folder itself may be reached through
one): a link where a file or one of its folders would go (`tests` -> ~/.ssh, say) refuses the whole project before
its first file, naming the link, and each file is then created through folders opened without following links,
so a link made meanwhile is refused too rather than followed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata, resources
from importlib.resources.abc import Traversable
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from stratus.version import __version__

SERVER_APP = "app:server"
"""The project's server, as `module:attribute`: `app.py`'s `server`."""

_RENAMED = {"gitignore": ".gitignore"}
"""Files stored under another name: a dotfile is not package data."""

_EXECUTABLE = {"run.sh"}

DISTRIBUTION = "stratus-mcp"
EXTRAS = "redis,jwt,powertools"
"""The extras the functions run: the Redis store, JWT verification, Powertools (boto3 comes with the runtime)."""
VENDOR = Path("vendor")
"""Where a project keeps the wheel of Stratus it was made with, when that came from a file."""

_STACK_NAME = re.compile(r"[^A-Za-z0-9-]+")

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


@dataclass(frozen=True)
class StratusSource:
    """Where the project's build gets Stratus: `requirement` as pip takes it, beside `wheel` to copy into VENDOR."""

    requirement: str
    wheel: Path | None = None
    checkout: bool = False
    """pip builds the requirement in its own folder (setuptools' build/), which parallel builds would share."""


def stratus_source(direct_url: str | None, version: str = __version__) -> StratusSource:
    """The requirement that installs, into the project's functions, the Stratus pip installed here.

    `direct_url` is the distribution's `direct_url.json` (PEP 610), which pip writes for anything it did not take
    from an index: None means the index, where `version` is published.
    """
    if direct_url is None:
        return StratusSource(f"{DISTRIBUTION}[{EXTRAS}]=={version}")
    record = json.loads(direct_url)
    url = str(record["url"])
    named = f"{DISTRIBUTION}[{EXTRAS}] @ "
    if vcs := record.get("vcs_info"):
        commit = vcs.get("commit_id")
        return StratusSource(f"{named}{vcs['vcs']}+{url}" + (f"@{commit}" if commit else ""))
    parts = urlsplit(url)
    path = Path(url2pathname(parts.path))
    if parts.scheme == "file" and "archive_info" in record and path.suffix == ".whl":
        return StratusSource(f"{VENDOR.as_posix()}/{path.name}[{EXTRAS}]", wheel=path)
    return StratusSource(named + url, checkout=parts.scheme == "file" and "dir_info" in record)


def installed_stratus() -> StratusSource:
    """`stratus_source` of the Stratus installed here: the first one an installer recorded (an `INSTALLER` file),
    passing over a checkout's `stratus_mcp.egg-info`, which setuptools leaves in the source tree."""
    for found in metadata.distributions(name=DISTRIBUTION):
        if found.read_text("INSTALLER") is not None:
            return stratus_source(found.read_text("direct_url.json"))
    return stratus_source(None)


def stack_name(target: Path) -> str:
    """A CloudFormation stack name (letters, digits, hyphens; a letter first; 128 at most) from the project's folder."""
    name = _STACK_NAME.sub("-", target.resolve().name).strip("-")
    if not name[:1].isalpha():
        name = f"mcp-{name}".rstrip("-")
    return name[:128].rstrip("-")


def _render(name: str, text: str, *, stratus: StratusSource, stack: str) -> str:
    if name == "template.yaml":
        return project_template(text)
    return (
        text.replace("@STRATUS_REQUIREMENT@", stratus.requirement)
        .replace("@STACK_NAME@", stack)
        .replace("@PARALLEL_BUILDS@", "false" if stratus.checkout else "true")
    )


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


def _create(target: Path, relative: Path, content: bytes, *, executable: bool) -> bool:
    """Create `relative` beneath `target` with `content`; False when a file is already there (never replaced).

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
    with os.fdopen(descriptor, "wb") as out:
        if executable:
            os.fchmod(out.fileno(), 0o755)
        out.write(content)
    return True


def init_project(target: Path, *, force: bool = False, stratus: StratusSource | None = None) -> Created:
    """Write the project's files into `target` (created if missing), its build getting Stratus from `stratus`
    (default: `installed_stratus()`).

    A folder that already holds anything is refused unless `force`; even then an existing file is never
    overwritten, only reported as kept.

    Raises:
        ScaffoldError: `target` is not a folder, is not empty without `force`, holds a symbolic link where a
            file of the project or one of its folders goes, or Stratus's wheel is gone (nothing is written then).
    """
    stratus = stratus or installed_stratus()
    if target.exists() and not target.is_dir():
        raise ScaffoldError(f"{target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise ScaffoldError(f"{target} is not empty; pass --force to add the missing files (none is overwritten)")
    if stratus.wheel is not None and not stratus.wheel.is_file():
        raise ScaffoldError(
            f"Stratus was installed from {stratus.wheel}, which is gone, and the project's build copies it into "
            f"{VENDOR}/; nothing was written. Put the wheel back, or install Stratus again from where it is now"
        )
    files = [
        (relative, source.read_bytes())
        for relative, source in _files(resources.files("stratus.handlers") / "project-template")
    ]
    if stratus.wheel is not None:
        files.append((VENDOR / stratus.wheel.name, stratus.wheel.read_bytes()))
    link = _first_link(target, (relative for relative, _ in files))
    if link is not None:
        raise _link_refused(link)
    target.mkdir(parents=True, exist_ok=True)
    stack = stack_name(target)
    created = Created()
    for relative, content in files:
        if (target / relative).exists():
            created.kept.append(relative)
            continue
        if relative.parent != VENDOR:
            text = content.decode("utf-8")
            content = _render(relative.as_posix(), text, stratus=stratus, stack=stack).encode("utf-8")
        if _create(target, relative, content, executable=relative.name in _EXECUTABLE):
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
    stratus = installed_stratus()
    try:
        created = init_project(args.directory, force=args.force, stratus=stratus)
    except ScaffoldError as exc:
        print(f"stratus: {exc}", file=sys.stderr)
        return 2
    for relative in created.written:
        print(f"created {args.directory / relative}")
    for relative in created.kept:
        print(f"kept    {args.directory / relative} (it already exists)")
    if Path("Makefile") in created.written:
        print(f"\nsam build installs Stratus as {stratus.requirement} (the Makefile's STRATUS_REQUIREMENT)")
    here = Path(args.directory).resolve() == Path.cwd().resolve()
    enter = "" if here else f"cd {args.directory} && "
    print(f"\nNext: {enter}stratus serve --app {SERVER_APP}  (README.md says more)")
    return 0
