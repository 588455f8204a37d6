"""DynamoDB for `stratus local`: moto's server on 127.0.0.1, answering one request at a time, with the stack's table.

The deployed stack keeps its state in a DynamoDB table that every container shares. `stratus local` gives its
containers the same when no store is named: moto's DynamoDB (`moto[server]`, in the `local` extra), its table made
with the schema the stores use (`stratus.stores.dynamodb.schema`), so a request finds its session on whichever
container takes it. moto's own ThreadedMotoServer handles requests on parallel threads without making a conditional
write atomic against the others, so two racing writers could both pass a condition; real DynamoDB never lets them.
Serving one request at a time gives DynamoDB's per-item atomicity.

moto checks no credentials, so the server answers only requests that carry a per-server secret as the first segment
of their path (the endpoint it hands out is `http://127.0.0.1:<port>/<secret>`, and botocore keeps an endpoint's path
in front of these JSON APIs' `POST /`) and whose Host names the loopback address and port it listens on. A page in
the developer's browser that found the port, by DNS rebinding or otherwise, knows neither: it is refused 403
`UnrecognizedClientException`, as the Lambda API (`invoke_api`) refuses it, before moto reads anything.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Iterable
from threading import Event, Thread
from typing import TYPE_CHECKING

from moto.core.model_instances import reset_model_data
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

TABLE = "stratus-local"
"""The table `stratus local` makes on its embedded DynamoDB."""


class _BoundedReadHandler(MotoRequestHandler):
    """A request that does not arrive whole within `timeout` seconds is dropped. Serving one at a time, the server
    would otherwise wait on a client frozen mid-send (an emulated Lambda container frozen after its invocation,
    while a read it no longer needs was being written) and answer nobody until that container thaws; DynamoDB is
    never held by one client. The dropped client finds its connection reset when it thaws, and botocore resends."""

    timeout = 2.0
    disable_nagle_algorithm = True  # werkzeug writes an answer's head and body apart: neither waits for an ACK


def _forgetting_instances(app: WSGIApplication) -> WSGIApplication:
    """`app`, dropping after each request moto's list of every model object it ever made (kept for its dashboard,
    which the tests do not use). A transaction deep-copies its table, so without this a run of 2,000 transactional
    creates kept about 22 GB alive, and the garbage collector walked all of it."""

    def serve(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        try:
            return app(environ, start_response)
        finally:
            reset_model_data()

    return serve


_LOOPBACK_NAMES = ("127.0.0.1", "localhost")
_UNRECOGNIZED = json.dumps(
    {
        "__type": "com.amazon.coral.service#UnrecognizedClientException",
        "message": "The security token included in the request is invalid.",
    }
).encode()


def _keyed(app: WSGIApplication, secret: str) -> WSGIApplication:
    """`app` for requests whose path starts with `/<secret>` (removed before `app` sees it) and whose Host is this
    server's loopback address; any other gets 403 before its body is read."""
    prefix = f"/{secret}"

    def serve(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path: str = environ.get("PATH_INFO", "")
        rest = path[len(prefix) :]
        keyed = hmac.compare_digest(path[: len(prefix)].encode("latin-1"), prefix.encode()) and rest[:1] in ("", "/")
        loopback = {f"{name}:{environ.get('SERVER_PORT')}" for name in _LOOPBACK_NAMES}
        if not keyed or environ.get("HTTP_HOST", "").lower() not in loopback:
            start_response("403 Forbidden", [("Content-Type", "application/x-amz-json-1.0")])
            return [_UNRECOGNIZED]
        environ["PATH_INFO"] = rest or "/"
        return app(environ, start_response)

    return serve


class SerialMotoServer:
    """Start, ask for the endpoint, stop; the server thread is ended and joined on stop."""

    def __init__(self) -> None:
        self._ready = Event()
        self._server: BaseWSGIServer | None = None
        self._secret = secrets.token_urlsafe(16)
        self._thread = Thread(target=self._serve, name="moto-dynamodb", daemon=True)

    def _serve(self) -> None:
        app = _keyed(_forgetting_instances(DomainDispatcherApplication(create_backend_app)), self._secret)
        self._server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=_BoundedReadHandler)
        self._ready.set()
        self._server.serve_forever(poll_interval=0.05)

    def start(self) -> str:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("moto's server did not start")
        assert self._server is not None
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}/{self._secret}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
        self._thread.join(10)


def embedded_dynamodb() -> tuple[SerialMotoServer, dict[str, str]]:
    """A started DynamoDB with the stack's table, and the settings that point every container at it."""
    import boto3

    from stratus.stores.dynamodb.schema import create_table

    server = SerialMotoServer()
    endpoint = server.start()
    try:
        client = boto3.client(
            "dynamodb",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",  # noqa: S106 - moto takes any key, as the containers' own ("local")
        )
        create_table(client, TABLE)
    except BaseException:
        server.stop()
        raise
    return server, {"STRATUS_STORE": f"dynamodb://{TABLE}", "AWS_ENDPOINT_URL_DYNAMODB": endpoint}
