"""The benchmark venvs: the interpreter of `.venv` (never touched) with the packages each subject needs.

`${XDG_CACHE_HOME:-~/.cache}/stratus/bench-venv` holds Stratus's runtime dependencies pinned to the versions in
`.venv` plus `awslabs-mcp-lambda-handler` (which pulls boto3): Stratus, the floor and awslabs run there.
The official SDK and FastMCP bring their own dependency trees, so each gets a venv of its own
(`bench-anchor-sdk`, `bench-anchor-fastmcp`, `bench-anchor-rmsl` for run-mcp-servers-with-aws-lambda) with the
same Mangum and uvicorn. Stratus itself is installed nowhere: the
children get the repository and a tree of links mirroring the `stratus` package on `PYTHONPATH`
(`measure.working_tree_path`), so they always run the working tree.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ANCHOR = "awslabs-mcp-lambda-handler"
ANCHOR_PACKAGES = {
    "sdk": ["mcp==2.3.0"],
    "fastmcp": ["fastmcp==4.2.3"],
    "rmsl": ["run-mcp-servers-with-aws-lambda==0.5.22"],
}
CHARTS = "matplotlib==3.11.2"
"""Only the bench venv draws the report's charts; the project never imports matplotlib."""
"""The anchors with venvs of their own, pinned so that reruns compare like with like."""
PINS_MARKER = ".bench-pins"


def cache_dir() -> Path:
    """`${XDG_CACHE_HOME:-~/.cache}/stratus`, as scripts/conformance has it."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stratus"


def runtime_pins(project: str = "stratus-mcp") -> list[str]:
    """`name==version` for every runtime dependency of `project` (no extras), as installed in this interpreter."""
    pins: dict[str, str] = {}
    todo = [project]
    while todo:
        dist = metadata.distribution(todo.pop())
        for raw in dist.requires or []:
            requirement = Requirement(raw)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            name = canonicalize_name(requirement.name)
            if name not in pins:
                pins[name] = metadata.version(name)
                todo.append(name)
    return sorted(f"{name}=={version}" for name, version in pins.items())


def _pip_install(python: Path, requirements: list[str]) -> None:
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"could not install {' '.join(requirements)} with {python}")


def ensure_venv(log: bool = True) -> Path:
    """The main bench venv's python (Stratus, the floor, awslabs). Starlette is the floor's, not Stratus's; redis
    is Stratus's `redis` extra, for its cold start on the Redis store (boto3 comes with awslabs)."""
    extras = [f"{name}=={metadata.version(name)}" for name in ("starlette", "redis")]
    return _ensure(cache_dir() / "bench-venv", [*runtime_pins(), *extras, ANCHOR, CHARTS], log)


def ensure_anchor_venv(name: str, log: bool = True) -> Path:
    """The python of anchor `name`'s own venv (`sdk` or `fastmcp`), with Stratus's Mangum and uvicorn pins (the
    Lambda adapter and the server of the throughput run are then the same for every subject)."""
    shared = [pin for pin in runtime_pins() if pin.startswith(("mangum==", "uvicorn==", "h11=="))]
    return _ensure(cache_dir() / f"bench-anchor-{name}", [*ANCHOR_PACKAGES[name], *shared], log)


def interpreter(version: str) -> Path | None:
    """pyenv's CPython `version` (e.g. "3.12"), newest patch release first, or None when it is not installed."""
    versions = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = sorted(versions.glob(f"{version}.*/bin/python{version}"), key=lambda path: _release(path.parts[-3]))
    return found[-1] if found else None


def _release(name: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in name.split("."))


def ensure_python_venv(version: str, bench_python: Path, log: bool = True) -> Path | None:
    """A venv on CPython `version` with Stratus's runtime pins and the bench venv's awslabs handler, for the warm
    path per Python (the bench venv itself where it runs that version); None when pyenv has no such Python."""
    if versions(bench_python)["python"].startswith(f"{version}."):
        return bench_python
    base = interpreter(version)
    if base is None:
        return None
    anchor = f"{ANCHOR}=={versions(bench_python)[ANCHOR]}"
    return _ensure(cache_dir() / f"bench-py{version}", [*runtime_pins(), anchor], log, base=base)


def _ensure(venv: Path, wanted: list[str], log: bool, base: Path | None = None) -> Path:
    """`venv`'s python (on `base`, else this interpreter): built (in a staging folder, then renamed) if missing,
    re-pinned if `wanted` changed."""
    marker_text = "\n".join(wanted) + "\n"
    if not (venv / "bin" / "python").exists():
        if log:
            print(f"creating the benchmark venv at {venv} (once): {' '.join(wanted)}", file=sys.stderr)
        staging = venv.with_name(f"{venv.name}.partial.{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        creator = base or Path(getattr(sys, "_base_executable", sys.executable))
        subprocess.run([str(creator), "-m", "venv", str(staging)], check=True)
        _pip_install(staging / "bin" / "python", wanted)
        (staging / PINS_MARKER).write_text(marker_text)
        try:
            staging.rename(venv)
        except OSError:  # another run finished the same venv first
            shutil.rmtree(staging, ignore_errors=True)
    marker = venv / PINS_MARKER
    if not marker.exists() or marker.read_text() != marker_text:
        if log:
            print(f"re-pinning {venv}: {' '.join(wanted)}", file=sys.stderr)
        _pip_install(venv / "bin" / "python", wanted)
        marker.write_text(marker_text)
    return venv / "bin" / "python"


def versions(python: Path) -> dict[str, str]:
    """Versions of the packages that matter for the comparison, as installed in the bench venv."""
    names = [
        "run-mcp-servers-with-aws-lambda",
        "mangum",
        "uvicorn",
        "starlette",
        "pydantic",
        "pydantic-core",
        "anyio",
        ANCHOR,
        "mcp",
        "fastmcp",
        "boto3",
        "botocore",
    ]
    code = (
        "import sys, platform\nfrom importlib import metadata\n"
        f"names = {names!r}\n"
        "out = {'python': platform.python_version()}\n"
        "for n in names:\n"
        "    try: out[n] = metadata.version(n)\n"
        "    except metadata.PackageNotFoundError: pass\n"
        "print(repr(out))\n"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    result: dict[str, str] = ast.literal_eval(done.stdout)
    return result
