"""The store's atomic rewrite: compare-and-swap on the bytes read, all or nothing, durable."""

from __future__ import annotations

import fcntl
import os
import signal
from pathlib import Path

import pytest
from factories import make_store, note, raw_bytes

from ledger.errors import Conflict, LedgerDamaged
from ledger.log.file_store import FileStore
from ledger.log.memory_store import MemoryStore
from ledger.log.store_interface import Store


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return make_store(request.param, tmp_path)


def _other_ledger(*texts: str) -> bytes:
    """The bytes of another valid ledger holding one note per text."""
    other = MemoryStore()
    for text in texts:
        other.append([note(text)], expected_head=None)
    return other.raw


def _folder_entries(store: FileStore) -> list[str]:
    return sorted(p.name for p in store.path.parent.iterdir())


def test_rewrite_replaces_the_bytes_read(store: Store) -> None:
    """With the bytes it read, a rewrite replaces them; reads and appends follow the new ones."""
    store.append([note("a")], expected_head=None)
    replacement = _other_ledger("x", "y")
    store.rewrite(replacement, expected=store.read_bytes())
    assert raw_bytes(store) == replacement
    assert [e.data["text"] for e in store.read().events] == ["x", "y"]
    store.append([note("z")], expected_head=None)
    assert [e.data["text"] for e in store.read().events] == ["x", "y", "z"]


def test_rewrite_refuses_when_the_ledger_changed_since_it_was_read(store: Store) -> None:
    """Another writer's append between read and rewrite: Conflict, and nothing is written."""
    store.append([note("a")], expected_head=None)
    read = store.read_bytes()
    store.append([note("another writer")], expected_head=None)
    before = raw_bytes(store)
    with pytest.raises(Conflict, match="changed since it was read; nothing was rewritten"):
        store.rewrite(_other_ledger("x"), expected=read)
    assert raw_bytes(store) == before
    if isinstance(store, FileStore):
        assert _folder_entries(store) == ["events.jsonl", "events.jsonl.lock"]


def test_rewrite_refuses_bytes_that_are_not_a_ledger(store: Store) -> None:
    """The store never writes a damaged ledger: LedgerDamaged, nothing written."""
    store.append([note("a")], expected_head=None)
    before = store.read_bytes()
    damaged = _other_ledger("x", "y").replace(b'"x"', b'"X"')
    with pytest.raises(LedgerDamaged, match=":1: "):
        store.rewrite(damaged, expected=before)
    assert raw_bytes(store) == before


def test_a_tip_read_before_a_rewrite_is_not_trusted_after_it(store: Store) -> None:
    """An append with a tip from before the rewrite re-reads the file: the moved head is a
    Conflict instead of a batch glued after events that are no longer there."""
    store.append([note("a")], expected_head=None)
    tip = store.stream(lambda _event: None)
    store.rewrite(_other_ledger("x"), expected=store.read_bytes())
    assert not store.unchanged_since(tip)
    with pytest.raises(Conflict):
        store.append([note("b")], expected_head=tip.head, position=tip)
    assert [e.data["text"] for e in store.read().events] == ["x"]


def test_rewrite_of_the_same_bytes_writes_nothing(tmp_path: Path) -> None:
    """Nothing to change: the file (its inode) stays as it was."""
    store = FileStore(tmp_path / "events.jsonl")
    store.append([note("a")], expected_head=None)
    inode = store.path.stat().st_ino
    store.rewrite(store.read_bytes(), expected=store.read_bytes())
    assert store.path.stat().st_ino == inode


def test_rewrite_syncs_the_new_file_then_renames_then_syncs_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new bytes are durable before they replace the old, and the rename after; all
    while the writer lock is held (no reader or appender sees it half done)."""
    store = FileStore(tmp_path / "events.jsonl")
    store.append([note("a")], expected_head=None)
    os.chmod(store.path, 0o640)
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        calls.append("fsync folder" if target == str(tmp_path) else "fsync file")
        real_fsync(fd)

    def replace(source: str, target: str | Path) -> None:
        calls.append("rename")
        lock = os.open(store.lock_path, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        finally:
            os.close(lock)
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    store.rewrite(_other_ledger("x"), expected=store.read_bytes())
    monkeypatch.undo()
    assert calls == ["fsync file", "rename", "fsync folder"]
    assert store.path.stat().st_mode & 0o777 == 0o640
    assert _folder_entries(store) == ["events.jsonl", "events.jsonl.lock"]


def test_a_rewrite_that_fails_before_the_rename_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure at the rename (EXDEV, EIO): the old bytes stay, no temporary file is left,
    and the lock is released for the next append."""
    store = FileStore(tmp_path / "events.jsonl")
    store.append([note("a")], expected_head=None)
    before = store.path.read_bytes()

    def replace(_source: str, _target: str | Path) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match="Input/output error"):
        store.rewrite(_other_ledger("x"), expected=before)
    monkeypatch.undo()
    assert store.path.read_bytes() == before
    assert _folder_entries(store) == ["events.jsonl", "events.jsonl.lock"]
    store.append([note("b")], expected_head=None)
    assert [e.data["text"] for e in store.read().events] == ["a", "b"]


def test_a_crash_before_the_rename_leaves_the_old_file(tmp_path: Path) -> None:
    """A process killed right before the rename (new bytes written and fsynced): the ledger
    is the old one, reads, audits clean and takes appends; only a temporary file remains."""
    store = FileStore(tmp_path / "events.jsonl")
    store.append([note("a")], expected_head=None)
    before = store.path.read_bytes()
    pid = os.fork()
    if pid == 0:  # the rewriter: killed inside the rename, never returns into pytest
        try:
            os.replace = lambda *_args: os.kill(os.getpid(), signal.SIGKILL)  # type: ignore[assignment]
            FileStore(store.path).rewrite(_other_ledger("x"), expected=before)
        finally:
            os._exit(1)
    _pid, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert store.path.read_bytes() == before
    leftovers = [
        p for p in _folder_entries(store) if p not in ("events.jsonl", "events.jsonl.lock")
    ]
    assert len(leftovers) == 1 and leftovers[0].endswith(".tmp")
    assert (tmp_path / leftovers[0]).read_bytes() == _other_ledger("x")
    assert store.findings() == []
    store.append([note("b")], expected_head=None)
    assert [e.data["text"] for e in store.read().events] == ["a", "b"]
