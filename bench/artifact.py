"""The package `sam build` produces, for the benchmark's "built" subjects, and the environment Lambda runs it in.

`build` runs the Makefile's `build-BufferedFunction` target, the recipe `sam build --build-in-source` calls for
every function of template.yaml (`Metadata: BuildMethod: makefile`): the runtime's dependencies as wheels for this
machine's architecture, Stratus installed through pyproject.toml's package mapping, examples/ and run.sh, and
unchecked-hash bytecode. The streaming function's package is the same recipe's output, run through run.sh.

`environment` is what Lambda gives the code: the package alone on the path and no cache it can write. The code
directory (/var/task) is read-only and /tmp is the only writable place
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-ephemeral-storage.html), so the interpreter reads the
shipped bytecode and compiles anything missing on every cold start; PYTHONDONTWRITEBYTECODE does here what the
read-only directory does there (this benchmark runs as root, which no file mode would stop).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import measure

FUNCTION = "BufferedFunction"
BUILD_TIMEOUT_S = 600


def build(out: Path, python: Path) -> Path:
    """The function's package, built afresh into `out` with `python` (the runtime's, CPython 3.13)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    subprocess.run(
        [
            "make", "--no-print-directory", "-C", str(measure.REPO), f"build-{FUNCTION}",
            f"ARTIFACTS_DIR={out}", f"PYTHON={python}", f"LAMBDA_PLATFORM=manylinux2014_{platform.machine()}",
        ],
        check=True,
        capture_output=True,
        timeout=BUILD_TIMEOUT_S,
    )  # fmt: skip
    return out


def environment(package: Path) -> dict[str, str]:
    """Overrides of the benchmark's child environment for a subject that runs the built package."""
    return {"PYTHONPATH": str(package), "PYTHONDONTWRITEBYTECODE": "1", "LAMBDA_TASK_ROOT": str(package)}


def without_working_tree(env: dict[str, str]) -> dict[str, str]:
    """`env` with nothing of the repository importable (the streaming entry sets its own path in run.sh)."""
    return {key: value for key, value in env.items() if key != "PYTHONPATH"} | {
        "PYTHONDONTWRITEBYTECODE": "1",
        "PATH": os.environ.get("PATH", ""),
    }
