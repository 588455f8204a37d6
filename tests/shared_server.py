"""Two `stratus serve` processes sharing one store behind a round-robin proxy, as one URL for outside tools.

    python -m tests.shared_server redis|dynamodb --app MODULE:ATTR --url-file FILE

Writes the proxy's MCP URL to FILE once everything answers, then serves until it gets SIGTERM or SIGINT, when it
stops the proxy, both processes and (for dynamodb) moto's server. scripts/conformance runs the conformance suite
through it, so every scenario's requests alternate between the two processes.
"""

from __future__ import annotations

import argparse
import secrets
import signal
from contextlib import ExitStack
from pathlib import Path

import boto3
import uvicorn

from core.stores.dynamodb import create_table
from tests.moto_server import SerialMotoServer
from tests.processes import RoundRobinProxy, free_port, stratus_processes

AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main() -> None:
    # uvicorn re-raises the signal that stopped it; exiting through SystemExit lets the ExitStack end the
    # processes this started (a default SIGTERM would kill this process first and orphan them).
    signal.signal(signal.SIGTERM, _exit)
    signal.signal(signal.SIGINT, _exit)
    parser = argparse.ArgumentParser()
    parser.add_argument("store", choices=["redis", "dynamodb"])
    parser.add_argument("--app", required=True)
    parser.add_argument("--url-file", required=True, type=Path)
    args = parser.parse_args()
    environment = {"STRATUS_SECRET_KEY": "shared-conformance-key", "STRATUS_STORE_PREFIX": f"cf-{secrets.token_hex(4)}"}
    with ExitStack() as stack:
        if args.store == "redis":
            environment["STRATUS_STORE"] = "redis://127.0.0.1:6379/0"
        else:
            moto = SerialMotoServer()
            endpoint = moto.start()
            stack.callback(moto.stop)
            client = boto3.client(
                "dynamodb",
                endpoint_url=endpoint,
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
            create_table(client, "conformance")
            environment.update(AWS, STRATUS_STORE="dynamodb://conformance", AWS_ENDPOINT_URL_DYNAMODB=endpoint)
        backends = stack.enter_context(stratus_processes(2, args.app, environment))
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(RoundRobinProxy(backends), host="127.0.0.1", port=port, log_level="warning")
        )
        args.url_file.write_text(f"http://127.0.0.1:{port}/mcp\n", encoding="utf-8")
        server.run()


if __name__ == "__main__":
    main()
