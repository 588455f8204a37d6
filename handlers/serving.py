"""uvicorn as Stratus runs it (`stratus serve`, `stratus local`, the streaming Lambda's Web Adapter target).

uvicorn is loaded without its command line. `import uvicorn` (and so `import uvicorn.config`) runs the package's
`__init__`, which imports `uvicorn.main`: the `uvicorn` command, with click, the reloader and the multiprocess
supervisor (multiprocessing, tempfile, bz2, lzma). Stratus only runs a `Config` under a `Server`, so a cold start that
paid for them would pay about a tenth of the streaming function's start for nothing. When nothing has imported uvicorn
yet, its package is put in `sys.modules` with its `__init__` deferred: the submodules import as usual, and the first
attribute read on the package itself (`uvicorn.run`, `from uvicorn import Config`, `uvicorn.__version__`) runs the
real `__init__` first, so code that uses uvicorn as documented sees no difference.

Two things uvicorn does not do by itself:

- its access log writes the whole request target, so a token in the query string (`?access_token=...`) or a session
  id in the session REST API's paths (`/events/{sessionId}`, `/session/{sessionId}`) would reach the logs. A filter on
  the `uvicorn.access` logger rewrites the path first; the line keeps client, method, path and status.
- it waits for ever on a client that sends its request headers slowly (only an idle kept-alive connection times
  out). The HTTP protocol here closes a connection whose headers are not complete within
  `STRATUS_SERVE_HEADER_TIMEOUT_SECONDS`; the endpoint bounds the body read (`STRATUS_BODY_TIMEOUT_SECONDS`), and
  a request on a connection beyond `STRATUS_SERVE_MAX_CONNECTIONS` is answered 503 naming that setting (uvicorn's
  own `limit_concurrency` answers a bare "Service Unavailable").
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import importlib
import importlib.util
import logging
import re
import sys
from types import ModuleType
from typing import Any

from stratus import Settings
from stratus.observability import ConsoleFormatter
from stratus.transport.session_api import REST_PREFIXES
from stratus.types import ASGIApp, Receive, Scope, Send


def _defer_package_init() -> None:
    if "uvicorn" in sys.modules:
        return
    spec = importlib.util.find_spec("uvicorn")
    if spec is None or spec.loader is None:  # not installed: the imports below raise as usual
        return
    loader = spec.loader
    package: ModuleType = importlib.util.module_from_spec(spec)

    def complete(name: str) -> Any:
        # PEP 562: called only for a name the package lacks. Once run, the real `__init__` defines every name (run
        # twice, by two threads reading the package at once, it only binds the same names again).
        vars(package).pop("__getattr__", None)
        loader.exec_module(package)
        return getattr(package, name)

    package.__getattr__ = complete  # type: ignore[method-assign]
    sys.modules["uvicorn"] = package
    # The one name uvicorn's own modules import from the package (`from uvicorn import Config`, the lifespan),
    # bound as the real `__init__`'s first line binds it; any other name still completes the package.
    package.Config = importlib.import_module("uvicorn.config").Config  # type: ignore[attr-defined]


_defer_package_init()

from uvicorn.config import LOGGING_CONFIG, STARTUP_FAILURE, Config  # noqa: E402
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle  # noqa: E402
from uvicorn.server import Server  # noqa: E402

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


def log_config(level: str = "INFO", *, console: bool = False) -> dict[str, Any]:
    """uvicorn's own logging configuration, with the access log redacted (each request's outcome); with `console`,
    Stratus's loggers on it too at `level`: a tool's own log lines (`ctx.info`), its errors with their reference, a
    store that does not answer. (With telemetry `emf` or `powertools` they go to the root's JSON handler instead.)"""
    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["redact_paths"] = {"()": RedactingAccessFilter}
    config["loggers"]["uvicorn.access"]["filters"] = ["redact_paths"]
    if not console:
        return config
    config["formatters"]["stratus"] = {"()": ConsoleFormatter}
    config["handlers"]["stratus"] = {
        "formatter": "stratus",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    config["loggers"]["stratus"] = {"handlers": ["stratus"], "level": level.upper(), "propagate": False}
    return config


def guarded_protocol(header_timeout_seconds: float, max_connections: int = 0) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol, closing a connection whose request headers take longer than
    `header_timeout_seconds` (counted from the connection, or from a later request's first byte), or whose request
    was answered before its body had arrived (a body nobody reads must not hold the connection as it trickles); with
    `max_connections`, a request beyond that many open connections (or requests in flight) is answered 503."""

    class GuardedHttpProtocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None
        _unread_cycle: RequestResponseCycle | None = None
        """The request whose headers are in and whose body is still arriving."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if max_connections:
                self.app = self._limited(self.app)

        def _limited(self, app: ASGIApp) -> ASGIApp:
            async def limited(scope: Scope, receive: Receive, send: Send) -> None:
                # Both sets include this connection and this request's task.
                if len(self.connections) > max_connections or len(self.tasks) > max_connections:
                    self.logger.warning("Refused a request: over STRATUS_SERVE_MAX_CONNECTIONS=%d", max_connections)
                    await send({"type": "http.response.start", "status": 503, "headers": _OVER_LIMIT_HEADERS})
                    await send({"type": "http.response.body", "body": _over_limit_body(max_connections)})
                    return
                await app(scope, receive, send)

            return limited

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._start_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_timer()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._start_header_timer()

        def on_headers_complete(self) -> None:
            self._stop_header_timer()
            super().on_headers_complete()
            self._unread_cycle = self.cycle

        def on_message_complete(self) -> None:
            self._unread_cycle = None
            super().on_message_complete()

        def on_response_complete(self) -> None:
            if self._unread_cycle is not None and self._unread_cycle.response_complete:
                self.transport.close()
            super().on_response_complete()

        def _start_header_timer(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout_seconds, self._headers_too_slow)

        def _stop_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.cycle is not None and not self.cycle.response_complete:
                # A request still being answered, a slow one pipelined behind it: close once the answer is out.
                self.cycle.keep_alive = False
            elif not self.transport.is_closing():
                self.transport.close()

    return GuardedHttpProtocol


_OVER_LIMIT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]


def _over_limit_body(max_connections: int) -> bytes:
    return (
        f"Service Unavailable: this server holds at most {max_connections} connections "
        "(STRATUS_SERVE_MAX_CONNECTIONS; 0 lifts the limit)"
    ).encode()


def serve(app: ASGIApp, settings: Settings, *, host: str, port: int, **options: Any) -> None:
    """Run `app` under uvicorn until it is stopped, redacted and guarded as above; `options` go to uvicorn's
    `Config`. As `uvicorn.run` does for one process, a server that could not start exits with uvicorn's status 3.
    No WebSocket protocol is loaded (Stratus serves none): an upgrade request is answered as plain HTTP."""
    limit = settings.serve_max_connections
    config = Config(
        app,
        host=host,
        port=port,
        log_level=settings.log_level.lower(),
        log_config=log_config(settings.log_level, console=settings.telemetry == "local"),
        http=guarded_protocol(settings.serve_header_timeout_seconds, limit),
        ws="none",
        **options,
    )
    server = Server(config)
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the SIGINT it stopped on
        server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)
