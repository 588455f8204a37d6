"""What a function's logs put into CloudWatch Logs, as its `LoggingConfig` decides it
(https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-advanced.html): the bytes the bill counts as
ingested, which CloudWatch charges per GB.

- `LogFormat` `Text` (the default) sends every line the function writes, and Lambda's own START, END and REPORT
  lines for each invocation.
- `JSON` filters by level (https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html):
  a line the function writes is sent when its level is at least `ApplicationLogLevel` (INFO by default), the level
  read from a JSON object's `level` key, and INFO for any other line; Lambda's own events are JSON objects
  (`platform.start` and `platform.report`, shaped as https://docs.aws.amazon.com/lambda/latest/dg/
  telemetry-schema-reference.html has them) sent at INFO, so `SystemLogLevel` `WARN` sends none for an invocation
  that went well.
- Each log event counts its message's UTF-8 bytes plus 26, as CloudWatch Logs sizes a batch
  (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutLogEvents.html).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

EVENT_OVERHEAD_BYTES = 26
_RANKS = {"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARN": 3, "WARNING": 3, "ERROR": 4, "FATAL": 5, "CRITICAL": 5}


@dataclass(frozen=True)
class LogConfig:
    log_format: str = "Text"
    application_level: str = "INFO"
    system_level: str = "INFO"

    def application_bytes(self, line: bytes) -> int:
        """The ingested bytes of one line the function wrote (0: filtered out, or blank)."""
        message = line.rstrip(b"\r\n")
        if not message:
            return 0
        if self.log_format == "JSON" and _rank(_level(message)) < _rank(self.application_level):
            return 0
        return len(message) + EVENT_OVERHEAD_BYTES

    def platform_bytes(self, request_id: str, report: dict[str, Any]) -> int:
        """The ingested bytes of Lambda's own events for one invocation; `report` holds its metrics as
        `platform.report` names them (durationMs, billedDurationMs, memorySizeMB, maxMemoryUsedMB, initDurationMs)."""
        if self.log_format != "JSON":
            return sum(len(message.encode()) + EVENT_OVERHEAD_BYTES for message in _text_events(request_id, report))
        if _rank(self.system_level) > _rank("INFO"):
            return 0
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        events = [
            {"time": now, "type": "platform.start", "record": {"requestId": request_id, "version": "$LATEST"}},
            {
                "time": now,
                "type": "platform.report",
                "record": {"requestId": request_id, "metrics": report, "status": "success"},
            },
        ]
        return sum(len(json.dumps(event, separators=(",", ":"))) + EVENT_OVERHEAD_BYTES for event in events)


def _text_events(request_id: str, report: dict[str, Any]) -> list[str]:
    line = (
        f"REPORT RequestId: {request_id}\tDuration: {report['durationMs']:.2f} ms\t"
        f"Billed Duration: {report['billedDurationMs']} ms\tMemory Size: {report['memorySizeMB']} MB\t"
        f"Max Memory Used: {report['maxMemoryUsedMB']} MB"
    )
    if "initDurationMs" in report:
        line += f"\tInit Duration: {report['initDurationMs']:.2f} ms"
    return [f"START RequestId: {request_id} Version: $LATEST", f"END RequestId: {request_id}", line]


def _level(message: bytes) -> str:
    if message.startswith(b"{"):
        try:
            entry = json.loads(message)
        except ValueError:
            return "INFO"
        if isinstance(entry, dict) and isinstance(entry.get("level"), str):
            return str(entry["level"]).upper()
    return "INFO"


def _rank(level: str) -> int:
    return _RANKS.get(level.upper(), _RANKS["INFO"])


def log_config(config: Any) -> LogConfig:
    """A function's `LoggingConfig` (resolved), or Lambda's defaults."""
    if not isinstance(config, dict):
        return LogConfig()
    return LogConfig(
        log_format=str(config.get("LogFormat", "Text")),
        application_level=str(config.get("ApplicationLogLevel", "INFO")),
        system_level=str(config.get("SystemLogLevel", "INFO")),
    )
