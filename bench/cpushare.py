"""Lambda's CPU share, imposed with a cgroup v1 `cpu` controller group: cold starts at a function's memory size.

Lambda allocates CPU in proportion to memory: a function gets one full vCPU at 1,769 MB and proportionally less
below (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html). A group's CFS quota per period
reproduces that share: at 512 MB, 512 / 1,769 = 0.29 vCPU, so cpu.cfs_quota_us = 29000 for cfs_period_us = 100000;
at 1,769 MB a quota of 100000 (one vCPU). A child joins the group between fork and exec (`joiner`), so the
interpreter's start is throttled too, as on Lambda. Where no writable v1 `cpu` hierarchy is mounted (not root, a
cgroup v2-only host, a container) the mode says so and measures nothing: a share is never faked.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import measure
import streaming

CPU_HIERARCHY = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000
FULL_VCPU_MB = 1769
MEMORY_SIZES_MB = (512, 1769)
DRAIN_SECONDS = 10.0


def quota_us(memory_mb: int) -> int:
    """The CFS quota giving a function of `memory_mb` its Lambda share of one CPU (to the hundredth of a vCPU)."""
    return min(PERIOD_US, round(memory_mb / FULL_VCPU_MB * 100) * PERIOD_US // 100)


def vcpus(memory_mb: int) -> float:
    return quota_us(memory_mb) / PERIOD_US


def unavailable() -> str | None:
    """Why the mode cannot run here, or None when the v1 `cpu` controller is mounted and writable."""
    mounted = False
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 3 and fields[2] == "cgroup" and Path(fields[1]) == CPU_HIERARCHY:
                mounted = "cpu" in fields[3].split(",")
    except OSError as error:
        return f"cannot read /proc/mounts ({error.strerror})"
    if not mounted:
        return f"no cgroup v1 cpu controller mounted at {CPU_HIERARCHY}"
    if not (CPU_HIERARCHY / "cpu.cfs_quota_us").exists() or not os.access(CPU_HIERARCHY, os.W_OK):
        return f"{CPU_HIERARCHY} is not writable (run as root)"
    return None


@contextmanager
def cpu_group(memory_mb: int) -> Iterator[Path]:
    """A new cpu group with Lambda's share at `memory_mb`, removed on leaving once its processes have exited."""
    group = CPU_HIERARCHY / f"stratus-bench-{os.getpid()}-{memory_mb}mb"
    group.mkdir()
    try:
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(quota_us(memory_mb)))
        yield group
    finally:
        deadline = time.monotonic() + DRAIN_SECONDS
        while (group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)  # a child just ended by its PID is still being reaped
        group.rmdir()


def joiner(group: Path) -> Callable[[], None]:
    """A `preexec_fn`: the child writes its own PID into the group between fork and exec."""
    procs = str(group / "cgroup.procs")

    def join() -> None:
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))

    return join


def run(
    pythons: dict[str, Path],
    env: dict[str, str],
    *,
    overrides: dict[str, dict[str, str]],
    runs: int,
    buffered: tuple[str, ...],
    streamed: tuple[str, ...],
    log: Callable[[str], None],
) -> dict[int, dict[str, Any]] | None:
    """Wall-clock cold starts at each memory size's share, `runs` per subject interleaved: the buffered child
    (spawn to exit, bench/cold.py) and the streaming entry (spawn to the first tools/call answered). None, with a
    message, where the mode cannot run."""
    reason = unavailable()
    if reason is not None:
        log(f"  CPU-share mode skipped: {reason}")
        return None
    order = [("buffered", subject) for subject in buffered] + [("streaming", subject) for subject in streamed]
    found: dict[int, dict[str, Any]] = {}
    for memory_mb in MEMORY_SIZES_MB:
        walls: dict[str, dict[str, list[float]]] = {
            "buffered": {subject: [] for subject in buffered},
            "streaming": {subject: [] for subject in streamed},
        }
        with cpu_group(memory_mb) as group:
            join = joiner(group)
            for round_ in range(runs):
                shift = round_ % len(order)
                for shape, subject in order[shift:] + order[:shift]:
                    subject_env = {**env, **overrides.get(subject, {})}
                    walls[shape][subject].append(_cold_wall(pythons[subject], shape, subject, subject_env, join))
                log(f"  {memory_mb} MB ({vcpus(memory_mb):.2f} vCPU) round {round_ + 1}/{runs}")
            throttled = _throttled_periods(group)
        found[memory_mb] = {**walls, "throttled_periods": throttled, "quota_us": quota_us(memory_mb)}
    return found


def _cold_wall(python: Path, shape: str, subject: str, env: dict[str, str], join: Callable[[], None]) -> float:
    if shape == "buffered":
        figures = measure.cold(python, subject, env, preexec=join)
        if figures["status"] != 200:
            raise RuntimeError(f"{subject} answered the cold tools/call with {figures!r}")
        return float(figures["process_wall_ms"])
    with streaming.started(python, subject, env, preexec=join) as running:
        return running.cold["wall_ms"]


def _throttled_periods(group: Path) -> int:
    """How many CFS periods throttled the group: evidence the quota bit."""
    for line in (group / "cpu.stat").read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == "nr_throttled":
            return int(value)
    return 0
