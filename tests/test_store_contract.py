"""The store contract: every backend (memory, file) appends, chains and reads events alike."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from factories import draft, make_store, note, raw_bytes, set_raw_bytes, skill

from ledger.errors import Conflict
from ledger.log import codec
from ledger.log.file_store import FileStore
from ledger.log.files import ledger_path
from ledger.log.integrity import schema_findings
from ledger.log.memory_store import MemoryStore
from ledger.log.record import seal_batch
from ledger.log.store_interface import Store
from ledger.schema.events import NoteAdded, PolicySet, SkillLoaded


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return make_store(request.param, tmp_path)


def test_empty_store_reads_as_an_empty_log(store: Store) -> None:
    """A store nothing was appended to has no events, no head and no torn tail."""
    log = store.read()
    assert (log.events, log.head, log.lamport, log.size, log.torn) == ((), (), 0, 0, None)
    assert store.findings() == []


def test_appended_events_read_back_equal(store: Store) -> None:
    """What append returns is exactly what a later read returns, payloads included."""
    first = store.append([note("one")], expected_head=None)
    second = store.append([skill(), note("two\u2028lines")], expected_head=None)
    log = store.read()
    assert log.events == first.events + second.events
    assert [e.payload() for e in log.events] == [
        NoteAdded(text="one"),
        SkillLoaded(name="pypto-op-perf-tune"),
        NoteAdded(text="two\u2028lines"),
    ]
    assert [e.written_by() for e in log.events] == [d.provenance for d in [note(), skill(), note()]]


def test_first_event_has_no_parents_and_counter_one(store: Store) -> None:
    """The first event of a ledger names no parents and has Lamport counter 1."""
    (event,) = store.append([note()], expected_head=None).events
    assert (event.parents, event.lamport, event.part) == ((), 1, (0, 1))


def test_a_batch_is_a_chain_after_the_head(store: Store) -> None:
    """A batch's first event names the head; each later part names only its predecessor."""
    (before,) = store.append([note("before")], expected_head=None).events
    batch = store.append([note("a"), note("b"), note("c")], expected_head=None).events
    assert [e.part for e in batch] == [(0, 3), (1, 3), (2, 3)]
    assert [e.parents for e in batch] == [(before.id,), (batch[0].id,), (batch[1].id,)]
    assert [e.lamport for e in batch] == [2, 3, 4]
    log = store.read()
    assert (log.head, log.lamport) == ((batch[-1].id,), 4)


def test_ids_are_content_hashes_of_the_stored_lines(store: Store) -> None:
    """Every stored line hashes to its event's id, and lines are the raw stored bytes."""
    store.append([note("x"), skill()], expected_head=None)
    log = store.read()
    assert [codec.id_of_line(line) for line in log.lines] == [e.id for e in log.events]
    assert b"".join(line + b"\n" for line in log.lines) == raw_bytes(store)
    assert log.size == len(raw_bytes(store))
    assert all(codec.is_canonical_line(line) for line in log.lines)


def test_same_drafts_give_same_bytes_in_every_store(tmp_path: Path) -> None:
    """Appending the same drafts yields byte-identical ledgers (deterministic encoding)."""
    ledgers = []
    for kind in ("memory", "file"):
        store = make_store(kind, tmp_path / kind)
        store.append([note("a")], expected_head=None)
        store.append([note("b"), skill()], expected_head=None)
        ledgers.append(raw_bytes(store))
    assert ledgers[0] == ledgers[1]


def test_expected_head_matching_appends(store: Store) -> None:
    """An append whose expected head is the current head goes through."""
    store.append([note("a")], expected_head=())
    head = store.read().head
    result = store.append([note("b")], expected_head=head)
    assert result.events[0].parents == head
    assert result.head == (result.events[-1].id,)


def test_stale_expected_head_conflicts_and_writes_nothing(store: Store) -> None:
    """An append decided on an old head raises Conflict and leaves the bytes unchanged."""
    stale = store.read().head
    store.append([note("other writer")], expected_head=None)
    before = raw_bytes(store)
    with pytest.raises(Conflict) as raised:
        store.append([note("mine")], expected_head=stale)
    assert raised.value.code == 3
    assert raw_bytes(store) == before


def test_empty_expected_head_conflicts_on_a_nonempty_ledger(store: Store) -> None:
    """expected_head=() means "the ledger is empty"; it conflicts once anything was written."""
    store.append([note()], expected_head=None)
    with pytest.raises(Conflict):
        store.append([note()], expected_head=())


def test_empty_append_writes_nothing(store: Store) -> None:
    """Appending no drafts writes no bytes (and creates no file)."""
    result = store.append([], expected_head=None)
    assert result.events == () and result.repairs == ()
    assert raw_bytes(store) == b""
    assert store.read().events == ()


def test_a_batch_that_cannot_be_encoded_writes_nothing(store: Store) -> None:
    """If one draft of a batch fails to encode, none of the batch's events land (atomic)."""
    store.append([note("kept")], expected_head=None)
    before = raw_bytes(store)
    unencodable = draft(PolicySet(key="k", value=object()))
    with pytest.raises(TypeError):
        store.append([note("lost"), unencodable], expected_head=None)
    assert raw_bytes(store) == before


def test_merged_branches_give_several_heads_and_the_next_batch_joins_them(
    store: Store,
) -> None:
    """Two branches after one base read as two heads; the next append names both, sorted."""
    (base,), base_lines = seal_batch([note("base")], (), 0)
    left, left_lines = seal_batch([note("left"), skill()], (base.id,), 1)
    (right,), right_lines = seal_batch([note("right")], (base.id,), 1)
    set_raw_bytes(store, b"".join(base_lines + left_lines + right_lines))
    log = store.read()
    assert log.head == tuple(sorted([left[-1].id, right.id]))
    assert log.lamport == 3
    (joined,) = store.append([note("after merge")], expected_head=log.head).events
    assert joined.parents == log.head
    assert joined.lamport == 4
    assert store.read().head == (joined.id,)
    assert store.findings() == []


def test_many_appends_keep_a_valid_chain(store: Store) -> None:
    """After many appends the chain verifies with no findings and schemas all structure."""
    for i in range(30):
        store.append([note(f"n{i}")] * (1 + i % 3), expected_head=store.read().head)
    log = store.read()
    assert len(log.events) == sum(1 + i % 3 for i in range(30))
    assert [e.lamport for e in log.events] == list(range(1, len(log.events) + 1))
    assert store.findings() == []
    assert schema_findings(log.events) == []


def test_a_second_store_on_the_same_bytes_reads_the_same_log(store: Store) -> None:
    """A fresh store over the same bytes (another process) reads an equal log."""
    store.append([note("a"), note("b")], expected_head=None)
    again = MemoryStore(raw_bytes(store), name=store.name)
    assert again.read().events == store.read().events


# --- file backend specifics ------------------------------------------------------------------


def test_ledger_path_is_under_custom_op(tmp_path: Path) -> None:
    """The ledger of an op lives at root/custom/<op>/events.jsonl."""
    assert ledger_path(tmp_path, "softmax") == tmp_path / "custom" / "softmax" / "events.jsonl"


def test_reading_a_missing_ledger_creates_nothing(tmp_path: Path) -> None:
    """A read of a ledger that does not exist is empty and creates no file or folder."""
    store = FileStore(ledger_path(tmp_path, "op"))
    assert store.read().events == ()
    assert not (tmp_path / "custom").exists()


def test_first_append_creates_folders_ledger_and_lock(tmp_path: Path) -> None:
    """The first append creates custom/<op>/, the ledger and its lock file beside it."""
    store = FileStore(ledger_path(tmp_path, "op"))
    store.append([note()], expected_head=None)
    names = sorted(p.name for p in (tmp_path / "custom" / "op").iterdir())
    assert names == ["events.jsonl", "events.jsonl.lock"]


def test_append_is_one_write_then_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch lands with a single os.write on the ledger, then an fsync, then the dir fsync."""
    store = FileStore(ledger_path(tmp_path, "op"))
    store.append([note("first")], expected_head=None)
    calls: list[tuple[str, int]] = []
    real_write, real_fsync = os.write, os.fsync

    def write(fd: int, data: bytes) -> int:
        calls.append(("write", fd))
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        calls.append(("fsync", fd))
        real_fsync(fd)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "fsync", fsync)
    store.append([note("a"), note("b"), note("c")], expected_head=None)
    assert [kind for kind, _fd in calls] == ["write", "fsync"]
    assert calls[0][1] == calls[1][1]


def test_creating_the_ledger_fsyncs_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creating the file (and its folders) fsyncs the directories that gained an entry."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    path = ledger_path(tmp_path, "op")
    FileStore(path).append([note()], expected_head=None)
    assert str(path) in synced
    assert str(path.parent) in synced  # the new file's entry
    assert str(tmp_path) in synced  # custom/ was created in the root


def test_a_failed_write_leaves_the_ledger_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the write fails (a full disk), the append raises and no byte of it stays."""
    path = ledger_path(tmp_path, "op")
    store = FileStore(path)
    store.append([note("kept")], expected_head=None)
    before = path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 100:
            real_write(fd, data[: len(data) // 2])
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError, match="No space left"):
        store.append([note("lost")], expected_head=None)
    assert path.read_bytes() == before
    other = FileStore(ledger_path(tmp_path, "new"))
    with pytest.raises(OSError, match="No space left"):
        other.append([note("lost")], expected_head=None)
    assert not other.path.exists()
