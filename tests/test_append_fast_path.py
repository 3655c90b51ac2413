"""The append after a tip (the fast path: no re-read) keeps the store's guarantees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from factories import note

from ledger.log.store import FileStore, ledger_path


def test_a_failed_write_after_a_tip_leaves_the_ledger_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk during an append after a tip: it raises and no byte of it stays; the
    size it cuts back to is the one the tip check read under the lock."""
    store = FileStore(ledger_path(tmp_path, "op"))
    store.append([note("kept")], expected_head=None)
    tip = store.stream(lambda _event: None)
    before = store.path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 100:
            real_write(fd, data[: len(data) // 2])
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError, match="No space left"):
        store.append([note("lost")], expected_head=tip.head, tip=tip)
    assert store.path.read_bytes() == before
    monkeypatch.setattr(os, "write", real_write)
    result = store.append([note("after")], expected_head=tip.head, tip=tip)
    assert store.path.read_bytes().startswith(before)
    assert [event.data["text"] for event in result.events] == ["after"]
