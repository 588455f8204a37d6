"""uvicorn as Stratus runs it (`stratus serve`, `stratus local`, the streaming Lambda's Web Adapter target).

Its access log writes the whole request target, so a token in the query string (`?access_token=...`) or a session id
in the seed REST paths (`/events/{sessionId}`, `/session/{sessionId}`) would reach the logs. A filter on the
`uvicorn.access` logger rewrites the path first; the line keeps client, method, path and status.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from core import Settings
from core.transport.asgi import ASGIApp
from core.transport.endpoint import REST_PREFIXES

_SESSION_IN_PATH = re.compile("^({})/[^/]+".format("|".join(re.escape(prefix[:-1]) for prefix in REST_PREFIXES)))


def redact_path(target: str) -> str:
    """A request target fit for a log: without its query string (it may carry a token) or a session id."""
    path = target.partition("?")[0]
    return _SESSION_IN_PATH.sub(r"\1/{sessionId}", path)


class RedactingAccessFilter(logging.Filter):
    """Rewrites every path argument of an access log record (uvicorn passes the target as one of its args)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_path(arg) if isinstance(arg, str) and arg.startswith("/") else arg for arg in record.args
            )
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's own logging configuration, with the access log redacted."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_paths"] = {"()": RedactingAccessFilter}
    config["loggers"]["uvicorn.access"]["filters"] = ["redact_paths"]
    return config


def serve(app: ASGIApp, settings: Settings, *, host: str, port: int, **options: Any) -> None:
    """Run `app` under uvicorn until it is stopped, its access log redacted; `options` go to uvicorn."""
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=settings.log_level.lower(),
        log_config=log_config(),
        **options,
    )
