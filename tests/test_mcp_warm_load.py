"""A kept OpLedger (the MCP server's warm state) folds only what another writer appended, and
never keeps a stale or damaged state: torn tails, tampered lines and rewritten prefixes fall
back to the full read, which names them as the CLI does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from api_harness import OP, Open, fresh_state, pending_attempt
from driver import verify

from ledger.errors import LedgerDamaged
from ledger.log.file_store import FileStore
from ledger.log.memory_store import MemoryStore
from ledger.log.store_interface import Store
from ledger.shell.api import OpLedger
from stages import commands as cmd


def _raw(store: Store) -> bytes:
    return store.raw if isinstance(store, MemoryStore) else Path(store.name).read_bytes()


def _append_behind(store: Store, data: bytes) -> None:
    """Bytes added to the ledger's end the way a careless writer would (same holder)."""
    if isinstance(store, MemoryStore):
        with store._lock:  # an in-place append: the holder stays the same
            store._data += data
        return
    with open(store.name, "ab") as out:
        out.write(data)


@pytest.fixture
def count_full_streams(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the stores read whole (`Store.stream`) from now on."""
    streams: list[str] = []
    original = Store.stream

    def counted(self: Store, sink: Callable[..., object]) -> object:
        streams.append(self.name)
        return original(self, sink)

    monkeypatch.setattr(Store, "stream", counted)
    return streams


def test_another_writers_append_is_folded_without_a_full_read(
    open_ledger: Open, count_full_streams: list[str]
) -> None:
    """A kept OpLedger resumes from its tip: the other writer's events are folded on top."""
    attempt = pending_attempt(open_ledger())
    kept = open_ledger()
    kept.load()
    count_full_streams.clear()
    open_ledger().execute(verify(attempt, 90.0))
    open_ledger().execute(cmd.AddNote(text="from the CLI"))
    loaded = kept.load()
    assert len(count_full_streams) == 2  # the two other writers' own loads, not the kept one
    assert loaded.state == fresh_state(kept.store)
    assert loaded.state.notes == ["from the CLI"]
    assert loaded.state.attempts[attempt].verdict == "adopt"
    assert loaded.position.events == len(kept.store.read().events)
    assert loaded.position.head == kept.store.read().head


def test_own_and_other_appends_interleave_without_a_full_read(
    open_ledger: Open, count_full_streams: list[str]
) -> None:
    """After its own append the kept OpLedger still resumes when another writer follows."""
    pending_attempt(open_ledger())
    kept = open_ledger()
    other = open_ledger()
    for number in range(3):
        kept.execute(cmd.AddNote(text=f"kept {number}"))
        other.execute(cmd.AddNote(text=f"other {number}"))
    count_full_streams.clear()
    state = kept.load().state
    assert count_full_streams == []
    assert state == fresh_state(kept.store)
    assert state.notes == [f"{who} {n}" for n in range(3) for who in ("kept", "other")]


def test_a_torn_tail_appended_behind_the_back_falls_back_to_the_full_read(
    open_ledger: Open,
) -> None:
    """An unterminated last line is not folded: the full read reports it as torn."""
    pending_attempt(open_ledger())
    kept = open_ledger()
    before = kept.load().state.event_count
    _append_behind(kept.store, b'{"id":"0123')
    loaded = kept.load()
    assert loaded.position.torn is not None
    assert loaded.state.event_count == before
    assert loaded.state == fresh_state(kept.store)


def test_a_tampered_line_appended_behind_the_back_is_damage(open_ledger: Open) -> None:
    """A valid-looking line whose id does not match its bytes is refused with exit 7, naming
    its line, and the kept state is not returned afterwards."""
    pending_attempt(open_ledger())
    kept = open_ledger()
    kept.load()
    raw = _raw(kept.store)
    last = raw.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    forged = last.replace(b'"lamport":', b'"lamport":9', 1) + b"\n"
    _append_behind(kept.store, forged)
    line = raw.count(b"\n") + 1
    with pytest.raises(LedgerDamaged, match=f":{line}:") as damaged:
        kept.load()
    assert damaged.value.code == 7
    with pytest.raises(LedgerDamaged):
        kept.load()


def test_a_valid_batch_then_damage_never_leaves_a_half_folded_state(open_ledger: Open) -> None:
    """When the new bytes hold a good batch and then a bad line, nothing of them is kept:
    once the bad line is cut away the state is the ledger's exactly."""
    pending_attempt(open_ledger())
    kept = open_ledger()
    kept.load()
    clean = _raw(kept.store)
    open_ledger().execute(cmd.AddNote(text="good"))
    good = _raw(kept.store)
    _append_behind(kept.store, b'{"id":"not an event"}\n')
    with pytest.raises(LedgerDamaged):
        kept.load()
    _restore(kept.store, good)
    assert kept.load().state == fresh_state(kept.store)
    assert kept.load().state.notes == ["good"]
    assert clean != good


def test_a_rewritten_prefix_is_read_again_whole(
    open_ledger: Open, count_full_streams: list[str]
) -> None:
    """A ledger replaced by other bytes (a checkout, a normalize) is not resumed from."""
    pending_attempt(open_ledger())
    kept = open_ledger()
    kept.load()
    shorter = OpLedger(kept.root, "other", store=MemoryStore())
    for command in (cmd.Init(op=OP), cmd.AddNote(text="another history")):
        shorter.execute(command)
    _restore(kept.store, shorter.store.raw)
    count_full_streams.clear()
    state = kept.load().state
    assert len(count_full_streams) == 1
    assert state.notes == ["another history"]
    assert state == fresh_state(kept.store)


def _restore(store: Store, data: bytes) -> None:
    if isinstance(store, MemoryStore):
        store.set_raw(data)
    else:
        assert isinstance(store, FileStore)
        store.path.write_bytes(data)
