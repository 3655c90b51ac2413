"""Durable file system changes (one folder fsync behaviour, atomic replacement) and locks."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import pytest
from factories import note

from ledger.log import locks, safe_files
from ledger.log.file_store import FileStore
from ledger.log.files import ledger_path


def _failing_fsync(monkeypatch: pytest.MonkeyPatch, code: int) -> list[int]:
    """Make os.fsync of a folder fail with `code`; return the descriptors it was asked for."""
    asked: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        asked.append(fd)
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(code, os.strerror(code))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return asked


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _synced_paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record what each os.fsync was asked to sync (a path; a temporary file's final name
    is unknown, so its folder and a `.tmp` suffix are what show)."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_fsync_dir_syncs_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder itself is what gets fsynced, through a descriptor that is closed after."""
    synced = _synced_paths(monkeypatch)
    before = _open_descriptors()
    safe_files.fsync_dir(tmp_path)
    assert synced == [str(tmp_path)]
    assert _open_descriptors() == before


def test_memory_md_syncs_its_bytes_but_not_its_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MEMORY.md is regenerated from the ledger: its new bytes are durable before the rename
    (a crash never leaves a mix, nor an empty file in place of the person's notes), but the
    rename need not be (the old file back is one command behind, which `check` reports); the
    ledger's own rewrite makes both durable."""
    from ledger.projections import splice

    memory = tmp_path / "MEMORY.md"
    memory.write_text("old\n")
    synced = _synced_paths(monkeypatch)
    assert splice.write_if_changed(memory, "new\n", root=tmp_path)
    assert memory.read_text() == "new\n"
    assert len(synced) == 1 and synced[0].endswith(".tmp")
    synced.clear()
    safe_files.replace_file(tmp_path / "events.jsonl", b"", root=tmp_path)
    assert len(synced) == 2 and synced[0].endswith(".tmp") and synced[1] == str(tmp_path)


def test_fsync_dir_skips_a_file_system_that_cannot_sync_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EINVAL (folder fsync not supported) is the one error that is ignored."""
    asked = _failing_fsync(monkeypatch, errno.EINVAL)
    before = _open_descriptors()
    safe_files.fsync_dir(tmp_path)
    assert len(asked) == 1
    assert _open_descriptors() == before


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC, errno.EROFS])
def test_fsync_dir_reports_every_other_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """Any other failure means the entry may not be on disk: it propagates, fd closed."""
    _failing_fsync(monkeypatch, code)
    before = _open_descriptors()
    with pytest.raises(OSError, match=os.strerror(code)) as caught:
        safe_files.fsync_dir(tmp_path)
    assert caught.value.errno == code
    assert _open_descriptors() == before


def test_fsync_dir_of_a_missing_folder_raises(tmp_path: Path) -> None:
    """A folder that cannot be opened is an error, not a silent skip."""
    with pytest.raises(FileNotFoundError):
        safe_files.fsync_dir(tmp_path / "missing")


def test_a_ledger_whose_folder_entry_cannot_be_synced_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store uses the same folder fsync: EIO fails the first append and leaves no file."""
    path = ledger_path(tmp_path, "op")
    path.parent.mkdir(parents=True)
    _failing_fsync(monkeypatch, errno.EIO)
    with pytest.raises(OSError, match="Input/output error"):
        FileStore(path).append([note("lost")], expected_head=None)
    assert not path.exists()


def test_a_ledger_on_a_file_system_without_folder_sync_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EINVAL from the folder fsync does not stop the store from creating the ledger."""
    path = ledger_path(tmp_path, "op")
    _failing_fsync(monkeypatch, errno.EINVAL)
    (event,) = FileStore(path).append([note("kept")], expected_head=None).events
    monkeypatch.undo()
    assert FileStore(path).read().events == (event,)


def test_replace_file_reports_a_failed_folder_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """replace_file shares the behaviour: the rename is done, but the caller learns that it
    may not be durable."""
    target = tmp_path / "MEMORY.md"
    target.write_bytes(b"old")
    _failing_fsync(monkeypatch, errno.EIO)
    with pytest.raises(OSError, match="Input/output error"):
        safe_files.replace_file(target, b"new", root=tmp_path)
    monkeypatch.undo()
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]


def test_make_dirs_fsyncs_each_parent_that_gained_an_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every created folder's parent is fsynced, top-down; existing folders are left alone."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    safe_files.make_dirs(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir()
    assert synced == [str(tmp_path), str(tmp_path / "a")]
    synced.clear()
    safe_files.make_dirs(tmp_path / "a" / "b")
    assert synced == []


def _lock_is_free(lock: Path, kind: int) -> bool:
    """True when another open file description could take `kind` on `lock` right now."""
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def test_the_writer_lock_excludes_readers_and_creates_its_folder(tmp_path: Path) -> None:
    """The writer lock of a ledger whose folder is missing creates it; while it is held no
    reader lock can be taken, and after it every one can."""
    lock = tmp_path / "custom" / "op" / "events.jsonl.lock"
    with locks.exclusive_lock(lock):
        assert not _lock_is_free(lock, fcntl.LOCK_SH)
    assert _lock_is_free(lock, fcntl.LOCK_EX)


def test_readers_share_the_lock_and_create_nothing(tmp_path: Path) -> None:
    """A reader of a ledger no writer has touched creates no lock file (read-only checkouts);
    readers hold the lock shared, so writers wait and other readers do not."""
    ledger = tmp_path / "events.jsonl"
    with locks.opened_for_reading(ledger) as fd:
        assert fd is None
    assert list(tmp_path.iterdir()) == []
    ledger.write_bytes(b"")
    (tmp_path / "events.jsonl.lock").write_bytes(b"")
    with locks.opened_for_reading(ledger) as fd:
        assert fd is not None
        assert _lock_is_free(tmp_path / "events.jsonl.lock", fcntl.LOCK_SH)
        assert not _lock_is_free(tmp_path / "events.jsonl.lock", fcntl.LOCK_EX)
