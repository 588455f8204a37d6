"""Where a warm session call's instructions go, by Python function and by component: callgrind on `python -X perf`.

With `-X perf` (CPython 3.12 and later) every Python function is entered through a trampoline of its own, named in
/tmp/perf-PID.map. Callgrind counts each trampoline as a function, and its inclusive cost is that Python function's,
callees included. Two runs of bench/warm_session.py that differ only by the number of calls (as
measure.session_instructions) give inclusive instructions per call by Python function. The trampolines add a few
instructions to every Python call, so components are reported as shares of the trampolined handler and applied to
the plain count.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

from measure import BENCH, REPO, SESSION_CALLS, valgrind

HANDLER = ("make_handler.<locals>.handler", "handlers/adapter.py")
APP = ("Router.__call__", "transport/asgi.py")
VALIDATE = ("Tool.validate", "server/tools.py")
TOOL = ("Tool.run", "server/tools.py")
RESULT = ("Tool.result", "server/tools.py")
PIPELINE = ("Pipeline.call_tool", "pipeline/pipeline.py")

MANGUM = "Mangum: event translation, ASGI cycle, event loop (and the Lambda adapter around it)"
PIPELINE_ROW = "pipeline: middleware, rate limits, breaker, retry, timeout, metrics"
REST = "JSON-RPC and dispatch: message checks, protocol version, Call, tools/call routing"
DIRECT: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "transport checks: headers, Host/Origin, Content-Type, Accept, body size, request",
        (
            ("request_headers", "transport/asgi.py"),
            ("HostOriginGuard.check", "transport/guards.py"),
            ("check_json_body", "transport/guards.py"),
            ("check_accepts_json", "transport/guards.py"),
            ("McpEndpoint._read_body", "transport/endpoint.py"),
            ("McpEndpoint._request", "transport/endpoint.py"),
        ),
    ),
    ("JSON parse of the body", (("decode", "protocol/jsonrpc.py"),)),
    (
        "session: load from the store (memory), owner check",
        (
            ("HandshakeTransport._session", "transport/handshake.py"),
            ("HandshakeTransport._tool_call_checks", "transport/handshake.py"),
        ),
    ),
    (
        "per-call context and cancellation registration",
        (
            ("Call.context", "protocol/call.py"),
            ("RunningCalls.start", "protocol/cancellation.py"),
            ("RunningCalls.stop", "protocol/cancellation.py"),
        ),
    ),
    ("argument validation (the tool's schema)", (VALIDATE,)),
    ("the tool function itself", (TOOL,)),
    (
        "result: CallToolResult, JSON-RPC response encoded, sent",
        (RESULT, ("encode", "protocol/jsonrpc.py"), ("send_response", "transport/asgi.py")),
    ),
)
ROWS = (MANGUM, *(name for name, _ in DIRECT), PIPELINE_ROW, REST)

_ANNOTATED = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.+?)(?:\s+\[(.+)\])?$")
_ADDRESS = re.compile(r"0x([0-9a-fA-F]+)")


def _trampolines(pid: int) -> dict[int, str]:
    """Start address -> `qualname:path` of every Python function the process `pid` entered (its perf map)."""
    perf_map = Path(f"/tmp/perf-{pid}.map")
    names: dict[int, str] = {}
    try:
        for line in perf_map.read_text().splitlines():
            start, _, name = line.split(" ", 2)
            if name.startswith("py::"):
                names[int(start, 16)] = name[4:]
    finally:
        perf_map.unlink(missing_ok=True)
    return names


def _inclusive(profile: str, names: dict[int, str]) -> dict[str, int]:
    """Inclusive instructions by Python function (`qualname:path`) in a callgrind profile."""
    done = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--inclusive=yes", profile],
        capture_output=True,
        text=True,
        check=True,
    )
    counts: dict[str, int] = {}
    for line in done.stdout.splitlines():
        match = _ANNOTATED.match(line)
        address = _ADDRESS.search(match.group(2)) if match else None
        if match is None or address is None or int(address.group(1), 16) not in names:
            continue
        name = names[int(address.group(1), 16)]
        counts[name] = counts.get(name, 0) + int(match.group(1).replace(",", ""))
    return counts


def _profile(python: Path, subject: str, calls: int, pool: int, env: dict[str, str], out: str) -> dict[str, int]:
    tool = valgrind()
    assert tool is not None
    argv = [tool, "--tool=callgrind", f"--callgrind-out-file={out}", str(python), "-X", "perf"]
    argv += [str(BENCH / "warm_session.py"), subject, str(calls), str(pool)]
    child = subprocess.Popen(
        argv, env={**env, "PYTHONHASHSEED": "0"}, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, errors = child.communicate()
    names = _trampolines(child.pid)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {child.returncode}:\n{errors.decode(errors='replace')}")
    return _inclusive(out, names)


def python_functions(python: Path, subject: str, env: dict[str, str]) -> dict[str, float]:
    """Inclusive instructions per warm call by Python function (`qualname:path`), trampolines included; empty
    before CPython 3.12 (no `-X perf`)."""
    probe = subprocess.run(
        [str(python), "-X", "perf", "-c", "import sys; print(sys.is_stack_trampoline_active())"],
        capture_output=True,
        text=True,
        env=env,
    )
    if probe.stdout.strip() != "True":
        return {}
    few, many = SESSION_CALLS
    with tempfile.TemporaryDirectory() as scratch:
        runs = [
            _profile(python, subject, count, many, env, os.path.join(scratch, f"cg.{count}")) for count in (few, many)
        ]
    return {name: (runs[1][name] - runs[0].get(name, 0)) / (many - few) for name in runs[1]}


def _find(functions: dict[str, float], wanted: tuple[str, str]) -> float:
    qualname, module = wanted
    return sum(
        count for name, count in functions.items() if name.startswith(qualname + ":") and name.endswith("/" + module)
    )


def components(functions: dict[str, float], instructions: float) -> dict[str, float]:
    """Instructions per call by component (ROWS), the trampolined shares applied to the plain count
    `instructions`."""
    total = _find(functions, HANDLER)
    if not total:
        return {}
    app = _find(functions, APP)
    rows = {MANGUM: total - app}
    for name, wanted in DIRECT:
        rows[name] = sum(_find(functions, key) for key in wanted)
    rows[PIPELINE_ROW] = sum(
        _find(functions, key) * sign for key, sign in ((PIPELINE, 1), (VALIDATE, -1), (TOOL, -1), (RESULT, -1))
    )
    rows[REST] = app - sum(rows[name] for name, _ in DIRECT) - rows[PIPELINE_ROW]
    return {name: rows[name] / total * instructions for name in ROWS}


def stratus_functions(functions: dict[str, float], top: int = 30) -> list[tuple[str, float]]:
    """The Stratus functions with the largest inclusive cost (trampolined), for the report."""
    ours = [
        (name, count)
        for name, count in functions.items()
        if "/stratus/" in name.split(":", 1)[-1] and "site-packages" not in name
    ]
    return sorted(ours, key=lambda item: -item[1])[:top]
