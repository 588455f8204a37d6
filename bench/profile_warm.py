"""Where a warm call's time goes, by module group: a sampler for warm_session.py --profile-warm.

cProfile's per-call hooks would inflate exactly the small functions a warm call is made of, so this samples
instead: SIGALRM fires every `INTERVAL_S` (a high-resolution timer; the CPU-time timer ITIMER_PROF only ticks at
the kernel's HZ) and the Python frame it interrupts is charged. Time in C (pydantic-core, the json scanner, dict
and str operations) lands on the Python frame that called it. A frame of a stdlib helper module (typing, enum,
functools, contextlib, ...) or of generated code (a dataclass's `__init__`, "<string>") is charged to the nearest
caller outside them, so the groups say whose work it is. asyncio, json and logging keep groups of their own, named
with the caller that asked for them ("asyncio, for Mangum" is the event loop Mangum runs each invocation).
"""

from __future__ import annotations

import os
import signal
import sys
import sysconfig
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

INTERVAL_S = 0.0005
STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
OWN_GROUPS = {"asyncio": "asyncio", "json": "json", "logging": "logging"}
GROUPS = (
    ("mangum/", "Mangum (event translation, ASGI cycle)"),
    ("stratus/handlers/", "Stratus handlers (the Lambda adapter)"),
    ("handlers/", "Stratus handlers (the Lambda adapter)"),
    ("stratus/transport/", "Stratus transport (HTTP checks, headers, guards)"),
    ("core/transport/", "Stratus transport (HTTP checks, headers, guards)"),
    ("stratus/protocol/dispatch", "Stratus dispatch"),
    ("core/protocol/dispatch", "Stratus dispatch"),
    ("stratus/protocol/", "Stratus protocol (JSON-RPC, sessions)"),
    ("core/protocol/", "Stratus protocol (JSON-RPC, sessions)"),
    ("stratus/pipeline/", "Stratus pipeline"),
    ("core/pipeline/", "Stratus pipeline"),
    ("stratus/server/", "Stratus server (tools, argument validation)"),
    ("core/server/", "Stratus server (tools, argument validation)"),
    ("stratus/stores/", "Stratus store"),
    ("core/stores/", "Stratus store"),
    ("bench-package/stratus/", "Stratus core, other"),
    ("core/", "Stratus core, other"),
    ("pydantic_core/", "pydantic"),
    ("pydantic/", "pydantic"),
    ("awslabs/", "awslabs handler"),
    ("starlette/", "Starlette"),
)
"""Markers in a module's path (with /, matched from a directory boundary), first match wins. The benchmark venvs
import the working tree as `stratus/...` (the mirror scripts/link-package makes), the repository has it as `core/`."""
HARNESS = ("warm_session.py", "profile_warm.py")
HARNESS_GROUP = "harness (the loop around the calls, the sampler)"


def _stdlib_module(filename: str) -> str | None:
    """The top-level stdlib module or package of `filename` (generated code counts as one), or None when it is
    not the stdlib's."""
    if filename.startswith("<"):
        return filename
    path = os.path.realpath(filename)
    if not path.startswith(STDLIB) or "site-packages" in path:
        return None
    return path[len(STDLIB) :].split(os.sep, 1)[0].removesuffix(".py")


def _group(path: str) -> str:
    for marker, name in GROUPS:
        if "/" + marker in path:
            return name
    return "other: " + os.path.basename(path)


class Sampler:
    """Counts SIGALRM samples by group and by module (file) while enabled."""

    def __init__(self) -> None:
        self.groups: Counter[str] = Counter()
        self.modules: Counter[str] = Counter()
        self._places: dict[str, tuple[str, str]] = {}

    def _place(self, filename: str) -> tuple[str, str]:
        """(group, kind) of a frame's file, kind "helper", "own" (a stdlib group of its own) or "code"; cached, as
        the handler runs thousands of times."""
        if filename not in self._places:
            stdlib = _stdlib_module(filename)
            if stdlib in OWN_GROUPS:
                self._places[filename] = (OWN_GROUPS[stdlib], "own")
            elif stdlib is not None:
                self._places[filename] = ("", "helper")
            elif os.path.basename(filename) in HARNESS:
                self._places[filename] = (HARNESS_GROUP, "code")
            else:
                self._places[filename] = (_group(filename.replace("\\", "/")), "code")
        return self._places[filename]

    def record(self, frame: FrameType | None) -> None:
        own, module = "", ""
        while frame is not None:
            filename = frame.f_code.co_filename
            group, kind = self._place(filename)
            if kind == "own" and not own:
                own, module = group, filename
            elif kind == "code":
                self.groups[f"{own}, for {group}" if own else group] += 1
                self.modules[_short(module or filename)] += 1
                return
            frame = frame.f_back
        self.groups["stdlib, no caller outside it"] += 1

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.record(frame)


def _short(filename: str) -> str:
    """A module's path from its package root (the stdlib, site-packages or the repository), for the report."""
    if os.path.realpath(filename).startswith(STDLIB):
        return os.path.realpath(filename)[len(STDLIB) :]
    if "site-packages" + os.sep in filename:
        return filename.split("site-packages" + os.sep, 1)[1]
    mirrored = os.sep + os.path.join("bench-package", "stratus") + os.sep
    if mirrored in filename:
        return "stratus" + os.sep + filename.rsplit(mirrored, 1)[1]
    for root in ("core", "handlers", "examples"):
        marker = os.sep + root + os.sep
        if marker in filename:
            return root + os.sep + filename.rsplit(marker, 1)[1]
    return os.path.basename(filename)  # the bench's own modules


def sample(calls: Callable[[Any], object], batches: int, prepare: Callable[[], Any]) -> dict[str, Any]:
    """Run `calls(prepared)` for `batches` batches under the sampler; `prepare()` makes each batch's input with the
    timer stopped (the fresh events are not the handler's work)."""
    sampler = Sampler()
    previous = signal.signal(signal.SIGALRM, sampler.handle)
    try:
        for _ in range(batches):
            prepared = prepare()
            signal.setitimer(signal.ITIMER_REAL, INTERVAL_S, INTERVAL_S)
            calls(prepared)
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, previous)
    return {
        "python": ".".join(map(str, sys.version_info[:3])),
        "samples": sum(sampler.groups.values()),
        "groups": dict(sampler.groups),
        "modules": dict(sampler.modules.most_common(25)),
    }
