"""Builders of test data shared by test modules: a fixed provenance, drafts, raw store bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attrs import evolve

from ledger.log.file_store import FileStore
from ledger.log.memory_store import MemoryStore
from ledger.log.record import Draft, Provenance
from ledger.log.store_interface import Store
from ledger.schema.events import NoteAdded, Payload, SkillLoaded

FIXED_AT = "2024-05-01T12:00:00.000000Z"


def provenance(**changes: Any) -> Provenance:
    """A fixed provenance (no clock, host or pid of the test run), with optional changes."""
    fixed = Provenance(
        at=FIXED_AT,
        tool="tune-ledger",
        version="0.1.0",
        host="test-host",
        pid=4242,
        command="tune-ledger test",
    )
    return evolve(fixed, **changes)


def draft(payload: Payload, **provenance_changes: Any) -> Draft:
    """A draft of `payload` with the fixed provenance."""
    return Draft(payload=payload, provenance=provenance(**provenance_changes))


def note(text: str = "a note") -> Draft:
    """A draft NoteAdded event."""
    return draft(NoteAdded(text=text))


def skill(name: str = "pypto-op-perf-tune") -> Draft:
    """A draft SkillLoaded event."""
    return draft(SkillLoaded(name=name))


def raw_bytes(store: Store) -> bytes:
    """The bytes a store holds, read around its API (for crash and tamper tests)."""
    if isinstance(store, MemoryStore):
        return store.raw
    assert isinstance(store, FileStore)
    return store.path.read_bytes() if store.path.exists() else b""


def set_raw_bytes(store: Store, data: bytes) -> None:
    """Overwrite the bytes a store holds, around its API (simulates a crash or an edit)."""
    if isinstance(store, MemoryStore):
        store.set_raw(data)
        return
    assert isinstance(store, FileStore)
    store.path.parent.mkdir(parents=True, exist_ok=True)
    # A new file rather than a truncated one: ext4 flushes a file truncated to zero on close
    # (auto_da_alloc), which makes tests that rewrite a ledger a thousand times slow.
    store.path.unlink(missing_ok=True)
    store.path.write_bytes(data)


def quarantined_bytes(store: Store, name: str) -> bytes:
    """The bytes of one quarantine file of a store."""
    return store.quarantine_bytes(name)


def add_quarantine(store: Store, name: str, data: bytes) -> None:
    """Place a quarantine file beside a store's ledger, around its API."""
    if isinstance(store, MemoryStore):
        store.add_quarantine(name, data)
        return
    assert isinstance(store, FileStore)
    (store.path.parent / name).write_bytes(data)


def make_store(kind: str, tmp_path: Path) -> Store:
    """A fresh empty store of `kind` ("memory" or "file")."""
    if kind == "memory":
        return MemoryStore()
    return FileStore(tmp_path / "custom" / "op" / "events.jsonl")
