"""The memory store hands out a copy of a session on every load: a caller's changes reach the store only through
`save`, as on the shared backends, whose loads decode a fresh record."""

from __future__ import annotations

import dataclasses

import pytest

from stratus.stores.memory.sessions import MemorySessionStore
from stratus.stores.records import SessionRecord, copy_session

pytestmark = pytest.mark.anyio


def _record() -> SessionRecord:
    return SessionRecord(
        session_id="s1",
        protocol_version="2025-11-25",
        client_capabilities={"sampling": {}},
        client_info={"name": "client"},
        principal="alice",
        log_level="debug",
        subscriptions=["file:///a"],
        initialized=True,
        created_at=1.0,
        last_active_at=2.0,
        expires_at=3.0,
        opened_by="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        log_head=4,
    )


def test_a_copy_has_every_field_of_the_session_and_is_another_record() -> None:
    record = _record()
    defaults = SessionRecord(session_id="", protocol_version="")

    copied = copy_session(record)

    # Every field set away from its default (a field added later must be added here too), so one the copy leaves
    # out shows in the dataclass's equality, which compares every field.
    assert all(getattr(record, item.name) != getattr(defaults, item.name) for item in dataclasses.fields(record))
    assert copied == record
    assert copied is not record


async def test_changing_a_loaded_session_changes_the_store_only_through_save() -> None:
    store = MemorySessionStore(clock=lambda: 100.0)
    await store.create(SessionRecord(session_id="s1", protocol_version="2025-11-25"))

    loaded = await store.load("s1")
    assert loaded is not None
    loaded.initialized, loaded.log_level = True, "debug"
    unsaved = await store.load("s1")
    await store.save(loaded)
    saved = await store.load("s1")

    assert unsaved is not None and (unsaved.initialized, unsaved.log_level) == (False, None)
    assert saved is not None and (saved.initialized, saved.log_level) == (True, "debug")
