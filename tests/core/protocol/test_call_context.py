"""A call's `Context`, built from its request without the dataclass's `__init__` (stratus.protocol.call): every field
set, to what `__init__` would set, for both eras."""

from __future__ import annotations

import dataclasses

import pytest

from stratus.protocol.call import Call
from stratus.protocol.jsonrpc import Request
from stratus.request.http import HttpRequest
from stratus.request.signal import CancellationSignal
from stratus.resilience.deadline import Deadline
from stratus.server.context import Context
from stratus.server.principal import Principal
from stratus.stores.records import SessionRecord


def _call(version: str, meta: dict[str, object] | None) -> Call:
    params: dict[str, object] = {"name": "add", "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    http = HttpRequest("POST", "/mcp", {"host": "localhost"}, disconnected=CancellationSignal())
    request = Request(id=7, method="tools/call", params=params)
    if version == "2026-07-28":
        return Call(request=request, version=version, client_info={"name": "c"}, http=http, principal=Principal("ana"))
    session = SessionRecord(session_id="s-1", protocol_version=version, client_capabilities={"roots": {}})
    return Call.in_session(request, session, http, Principal("ana"))


@pytest.mark.parametrize(
    ("version", "meta"),
    [
        ("2025-11-25", None),
        ("2025-11-25", {"progressToken": 3}),
        ("2026-07-28", {"io.modelcontextprotocol/logLevel": "info"}),
    ],
)
def test_a_calls_context_is_the_one_its_fields_make_through_init(version: str, meta: dict[str, object] | None) -> None:
    context = _call(version, meta).context(item="add", deadline=Deadline.within(5.0))
    names = {field.name for field in dataclasses.fields(Context)}
    assert set(vars(context)) == names
    assert context == Context(**{name: getattr(context, name) for name in names})
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.item = "other"  # type: ignore[misc]
    changed = dataclasses.replace(context, item="other")
    assert changed.item == "other" and changed.signal is context.signal
    assert context.transport == Context(request_id=0, method="", protocol_version="").transport  # the default
    assert context.metadata == {} and context.metadata is not _call(version, meta).context().metadata
