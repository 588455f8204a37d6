"""`--reload` for `stratus serve` and `stratus local`: the command runs in a child process, restarted whenever a
Python file under the folder it was started in changes, so what answers is always the code on disk.

Without it, `stratus local`'s containers keep the code they imported until they are retired, so an edit reaches
some requests and not others. The watcher compares modification times twice a second (no file-system events, so no
dependency). A restarted `stratus local` starts its containers afresh; its embedded DynamoDB starts empty (name a
`--store` to keep sessions across restarts).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

POLL_SECONDS = 0.5
SKIPPED_FOLDERS = frozenset({".git", ".venv", "venv", "__pycache__", ".aws-sam", "node_modules", ".cache", "build"})


def snapshot(root: Path) -> dict[Path, float]:
    """Each Python file under `root` (outside virtual environments, builds and caches) with its modification time."""
    found: dict[Path, float] = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [name for name in folders if name not in SKIPPED_FOLDERS]
        for name in files:
            if name.endswith(".py"):
                path = Path(folder) / name
                try:
                    found[path] = path.stat().st_mtime
                except OSError:  # removed between the listing and the stat
                    continue
    return found


def changed(before: dict[Path, float], after: dict[Path, float]) -> list[Path]:
    """The files added, removed or modified between two snapshots."""
    return sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def supervise(
    argv: Sequence[str],
    root: Path,
    *,
    poll_seconds: float = POLL_SECONDS,
    say: Callable[[str], object] = lambda line: sys.stderr.write(line + "\n"),
) -> int:
    """Run `stratus <argv>` (without `--reload`) in a child, restarting it when a file under `root` changes, until
    the child exits by itself or this process is interrupted; the child's exit status."""
    command = [sys.executable, "-m", "stratus.handlers.cli", *[arg for arg in argv if arg != "--reload"]]
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    say(f"stratus: reloading when a .py file under {root} changes")
    while True:
        seen = snapshot(root)
        child = subprocess.Popen(command)  # noqa: S603 - this Python running this command
        while not stopping and child.poll() is None:
            time.sleep(poll_seconds)  # the watch itself: a poll of modification times
            edited = changed(seen, snapshot(root))
            if edited:
                say(f"stratus: {edited[0].relative_to(root)} changed: restarting")
                break
        else:
            if child.poll() is not None and not stopping:
                return child.returncode
        _end(child)
        if stopping:
            return 0


def _end(child: subprocess.Popen[bytes]) -> None:
    """Stop the child as Ctrl+C would, and kill it if it has not ended within 10 s."""
    if child.poll() is None:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(5)
