"""One request as a method sees it: the JSON-RPC request, with what its era says about the client."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from stratus.errors import InvalidParamsError
from stratus.metrics import MetricsSink
from stratus.protocol import versions
from stratus.protocol.jsonrpc import Request
from stratus.request.http import HttpRequest
from stratus.request.inputs import InputRound
from stratus.request.signal import CancellationSignal
from stratus.resilience.deadline import Deadline
from stratus.server.context import Context
from stratus.server.principal import Principal
from stratus.stores.records import CallAdmission, SessionRecord
from stratus.types import JsonObject

if TYPE_CHECKING:
    from stratus.server.steps import StepJournal


class Call:
    """One request, with what its era says about the client. Read-only by convention. A plain slotted class, not a
    dataclass: it is built for every request, and its era and params, read several times a call, are plain
    attributes set once here rather than properties computed on each read."""

    __slots__ = (
        "admitted",
        "client_capabilities",
        "client_info",
        "http",
        "params",
        "principal",
        "request",
        "session",
        "stateless",
        "steps",
        "version",
    )

    def __init__(
        self,
        *,
        request: Request,
        version: str,
        client_capabilities: JsonObject | None = None,
        client_info: JsonObject | None = None,
        session: SessionRecord | None = None,
        http: HttpRequest | None = None,
        principal: Principal | None = None,
        admitted: CallAdmission | None = None,
        steps: StepJournal | None = None,
    ) -> None:
        self.request = request
        self.params: JsonObject = request.params
        self.version = version
        self.stateless = version in versions.STATELESS_VERSIONS
        self.client_capabilities: JsonObject = {} if client_capabilities is None else client_capabilities
        self.client_info = client_info
        self.session = session
        self.http = http
        self.principal = principal
        self.admitted = admitted
        """The store's answers for a tools/call, when the transport fetched them with the session."""
        self.steps = steps
        """Where a task's run keeps its steps (`Context.step`); None outside a task."""

    @classmethod
    def in_session(
        cls,
        request: Request,
        session: SessionRecord,
        http: HttpRequest | None,
        principal: Principal | None,
        admitted: CallAdmission | None = None,
    ) -> Call:
        """A handshake-era request of `session`: its version and its client's capabilities and info."""
        return cls(
            request=request,
            version=session.protocol_version,
            client_capabilities=session.client_capabilities,
            client_info=session.client_info,
            session=session,
            http=http,
            principal=principal,
            admitted=admitted,
        )

    @property
    def principal_key(self) -> str | None:
        return self.principal.key if self.principal else None

    def string_param(self, name: str) -> str:
        value = self.params.get(name)
        if not isinstance(value, str):
            raise InvalidParamsError(f"Invalid params: {name} must be a string")
        return value

    def object_param(self, name: str) -> JsonObject:
        value = self.params.get(name)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise InvalidParamsError(f"Invalid params: {name} must be an object")
        return value

    def require_session(self) -> SessionRecord:
        if self.session is None:  # the transport guarantees a session for handshake-era calls past initialize
            raise InvalidParamsError("This method needs a session")
        return self.session

    def context(
        self,
        *,
        item: str | None = None,
        deadline: Deadline | None = None,
        inputs: InputRound | None = None,
        publish: Callable[[str, JsonObject], Awaitable[None]] | None = None,
        metrics: MetricsSink | None = None,
    ) -> Context:
        meta = self.params.get("_meta")
        if not isinstance(meta, dict):
            meta = None
        if self.stateless:
            # At 2026-07-28 a closed stream is the cancellation, and the client asks for log messages in `_meta`.
            disconnected = self.http.disconnected if self.http else None
            signal = disconnected.child() if disconnected else CancellationSignal()
            level = meta.get(versions.LOG_LEVEL_META) if meta is not None else None
            log_level = level if isinstance(level, str) else None
            log_opted_in = meta is not None and versions.LOG_LEVEL_META in meta
        else:  # before, a client may drop and resume its stream; its session keeps the level it set
            signal = CancellationSignal()
            log_level = self.session.log_level if self.session else None
            log_opted_in = True
        return Context.of_fields(
            {
                "request_id": self.request.id,
                "method": self.request.method,
                "protocol_version": self.version,
                "session_id": self.session.session_id if self.session else None,
                "transport": "streamable-http",
                "client_capabilities": self.client_capabilities,
                "client_info": self.client_info,
                "meta": meta if meta is not None else {},
                "request": self.http,
                "user": self.principal,
                "metadata": {},
                "signal": signal,
                "deadline": deadline,
                "item": item,
                "log_level": log_level,
                "log_opted_in": log_opted_in,
                "inputs": inputs,
                "publish": publish,
                "metrics": metrics,
                "steps": self.steps,
            }
        )


Method = Callable[[Call], Awaitable[JsonObject]]
"""A method's implementation: what the dispatcher maps a method name to."""
