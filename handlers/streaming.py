"""The streaming Lambda entry point: uvicorn behind the AWS Lambda Web Adapter in response-stream mode.

`run.sh` (the function's handler) starts this module; the adapter (a layer, started by
`AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap`) forwards each invocation to it over HTTP on 127.0.0.1 and streams the
response back, so SSE reaches the client as it is written. The app, its stores and its telemetry are built once,
when the container starts.
"""

from __future__ import annotations

import os

import uvicorn

from core import Settings, build_app
from handlers.loading import load_server
from handlers.secrets import with_resolved_secrets
from handlers.telemetry import build_telemetry

DEFAULT_PORT = 8080  # the adapter's default AWS_LWA_PORT


def main() -> None:
    settings = with_resolved_secrets(Settings.from_env())
    server = load_server(settings.app)
    metrics, _ = build_telemetry(settings, server.name)
    app = build_app(server, settings, metrics=metrics)
    port = int(os.environ.get("AWS_LWA_PORT", DEFAULT_PORT))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level=settings.log_level.lower(), lifespan="on")


if __name__ == "__main__":
    main()
