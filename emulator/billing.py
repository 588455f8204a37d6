"""What the stack's invocations cost, as Lambda reports and bills them.

- After each invocation a `REPORT` line, as Lambda writes it to the function's log stream
  (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs.html): request id, duration, billed
  duration, memory size, max memory used, and `Init Duration` on a cold start (below DEBUG, `stratus local` leaves
  out those of a front door's requests, whose billed time is on the door's line: `access_line`). The emulator
  prefixes it with the function's name (`[stratus-local-McpFunction] REPORT RequestId: ...`) and writes it where
  the containers write.
- Billed duration is the duration rounded up to the millisecond (https://aws.amazon.com/lambda/pricing/), the init
  phase included on a cold start (on-demand functions are billed for it since August 2025:
  https://aws.amazon.com/blogs/compute/aws-lambda-standardizes-billing-for-init-phase/); GB-seconds are the memory
  (MemorySize, in GB) times the billed duration in seconds.
- Max memory used is the peak resident set of the container's process group: the sum of each process's `VmHWM`
  (/proc/<pid>/status).

`Bill.summary()` is what the Lambda API serves at `GET <AWS_ENDPOINT_URL_LAMBDA>/stratus/bill`: a JSON object of
function name to `{"invocations", "billedMs", "gbSeconds", "memoryMb", "logBytes", "emfDocuments", "readUnits",
"writeUnits"}` (what its logs put into CloudWatch Logs, `log_config`, how many of their lines were EMF documents, and
the DynamoDB request units its calls consumed, `capacity_units`); `Bill.table()` is printed when `stratus local`
stops.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from stratus.emulator.access_line import billed_here
from stratus.emulator.log_config import LogConfig


@dataclass
class FunctionBill:
    """One function's invocations so far."""

    memory_mb: int
    invocations: int = 0
    billed_ms: int = 0
    log_bytes: int = 0
    """What its logs put into CloudWatch Logs, its invocations' platform events included (`log_config`)."""
    emf_documents: int = 0
    """How many of its log lines were EMF documents (each turns into custom metric data points)."""

    @property
    def gb_seconds(self) -> float:
        return self.memory_mb / 1024 * self.billed_ms / 1000


def billed_ms(duration_ms: float, init_ms: float | None = None) -> int:
    """The billed duration: the duration (with the init phase on a cold start) rounded up to the millisecond."""
    return math.ceil(duration_ms + (init_ms or 0.0))


def peak_rss_mb(leader: int) -> int:
    """The peak resident memory of the process group `leader` leads, in MB (0 once it is gone)."""
    total_kb = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[2]) != leader:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total_kb += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return math.ceil(total_kb / 1024)


def report_line(
    name: str, request_id: str, duration_ms: float, memory_mb: int, max_memory_mb: int, init_ms: float | None
) -> str:
    """Lambda's REPORT line (monitoring-cloudwatchlogs.html), prefixed with the function's name."""
    line = (
        f"[{name}] REPORT RequestId: {request_id}\tDuration: {duration_ms:.2f} ms\t"
        f"Billed Duration: {billed_ms(duration_ms, init_ms)} ms\tMemory Size: {memory_mb} MB\t"
        f"Max Memory Used: {max_memory_mb} MB"
    )
    if init_ms is not None:
        line += f"\tInit Duration: {init_ms:.2f} ms"
    return line


class Bill:
    """Every function's invocations and GB-seconds; each invocation's REPORT line written to `output`."""

    def __init__(self, output: IO[bytes] | None = None, *, door_reports: bool = True) -> None:
        self._output = output
        self.door_reports = door_reports
        """Write the REPORT line of an invocation a front door's request made (`Options.door_reports`)."""
        self._lock = threading.Lock()
        self.functions: dict[str, FunctionBill] = {}
        self._units: dict[str, list[float]] = {}
        """DynamoDB's read and write request units by function, kept apart: a call may come before the function's
        first invocation is billed (its init), and a FunctionBill needs the function's memory."""

    def record(
        self,
        name: str,
        memory_mb: int,
        request_id: str,
        duration_ms: float,
        pid: int,
        init_ms: float | None,
        logging: LogConfig | None = None,
    ) -> str:
        """Bill one invocation and write its REPORT line; returns the line. `logging`: the function's, which decides
        the bytes its platform events add to its logs."""
        max_memory_mb = peak_rss_mb(pid) if pid else 0
        line = report_line(name, request_id, duration_ms, memory_mb, max_memory_mb, init_ms)
        billed = billed_ms(duration_ms, init_ms)
        metrics: dict[str, Any] = {
            "durationMs": round(duration_ms, 2),
            "billedDurationMs": billed,
            "memorySizeMB": memory_mb,
            "maxMemoryUsedMB": max_memory_mb,
        }
        if init_ms is not None:
            metrics["initDurationMs"] = round(init_ms, 2)
        logged = (logging or LogConfig()).platform_bytes(request_id, metrics)
        with self._lock:
            bill = self.functions.setdefault(name, FunctionBill(memory_mb))
            bill.invocations += 1
            bill.billed_ms += billed
            bill.log_bytes += logged
        if (request := billed_here.get()) is not None:  # a front door's request this invocation served
            request.append(billed)
            if not self.door_reports:
                return line
        output = self._output if self._output is not None else sys.stdout.buffer
        output.write(f"{line}\n".encode())
        output.flush()
        return line

    def logged(self, name: str, memory_mb: int, log_bytes: int, *, emf: bool = False) -> None:
        """Count what one line the function wrote put into its logs (`emf`: an EMF document)."""
        if log_bytes:
            with self._lock:
                bill = self.functions.setdefault(name, FunctionBill(memory_mb))
                bill.log_bytes += log_bytes
                bill.emf_documents += emf

    def consumed(self, name: str, read_units: float, write_units: float) -> None:
        """Count the DynamoDB request units one of the function's calls consumed."""
        with self._lock:
            units = self._units.setdefault(name, [0.0, 0.0])
            units[0] += read_units
            units[1] += write_units

    def summary(self) -> dict[str, Any]:
        with self._lock:
            return {
                name: {
                    "invocations": bill.invocations,
                    "billedMs": bill.billed_ms,
                    "gbSeconds": round(bill.gb_seconds, 6),
                    "memoryMb": bill.memory_mb,
                    "logBytes": bill.log_bytes,
                    "emfDocuments": bill.emf_documents,
                    "readUnits": self._units.get(name, [0.0, 0.0])[0],
                    "writeUnits": self._units.get(name, [0.0, 0.0])[1],
                }
                for name, bill in sorted(self.functions.items())
            }

    def table(self) -> str:
        rows = [f"{'function':<40} {'invocations':>11} {'billed ms':>10} {'GB-s':>12}"]
        for name, entry in self.summary().items():
            rows.append(f"{name:<40} {entry['invocations']:>11} {entry['billedMs']:>10} {entry['gbSeconds']:>12.6f}")
        return os.linesep.join(rows) + os.linesep
