"""moto's DynamoDB as a real HTTP endpoint on 127.0.0.1, answering one request at a time.

moto's own ThreadedMotoServer handles requests on parallel threads without making a conditional write atomic
against the others, so two racing writers can both pass a condition; real DynamoDB never lets them. Serving
one request at a time gives the tests DynamoDB's per-item atomicity.
"""

from __future__ import annotations

from threading import Event, Thread

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import BaseWSGIServer, make_server


class SerialMotoServer:
    """Start, ask for the endpoint, stop; the server thread is ended and joined on stop."""

    def __init__(self) -> None:
        self._ready = Event()
        self._server: BaseWSGIServer | None = None
        self._thread = Thread(target=self._serve, name="moto-dynamodb", daemon=True)

    def _serve(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=MotoRequestHandler)
        self._ready.set()
        self._server.serve_forever(poll_interval=0.05)

    def start(self) -> str:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("moto's server did not start")
        assert self._server is not None
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
        self._thread.join(10)
