"""The append at a position read before (no re-read of the file) keeps the store's guarantees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from factories import note
from hypothesis import given
from hypothesis import strategies as st

from ledger.log.file_store import FileStore
from ledger.log.files import ledger_path
from ledger.log.position import TAIL, Position, after_append
from ledger.log.record import Event


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
        store.append([note("lost")], expected_head=tip.head, position=tip)
    assert store.path.read_bytes() == before
    monkeypatch.setattr(os, "write", real_write)
    result = store.append([note("after")], expected_head=tip.head, position=tip)
    assert store.path.read_bytes().startswith(before)
    assert [event.data["text"] for event in result.events] == ["after"]


def test_a_quarantine_name_exists_whatever_the_file_is(tmp_path: Path) -> None:
    """The quarantine check answers as os.path.lexists: a file, a folder or a link (even a
    dangling one) by that name exists; a missing name or one no file can have does not."""
    store = FileStore(ledger_path(tmp_path, "op"))
    store.append([note("kept")], expected_head=None)
    folder = store.path.parent
    assert not store.quarantine_exists("events.jsonl.quarantine-1")
    (folder / "events.jsonl.quarantine-1").write_bytes(b"torn")
    (folder / "events.jsonl.quarantine-2").mkdir()
    (folder / "events.jsonl.quarantine-3").symlink_to(tmp_path / "nowhere")
    for number in (1, 2, 3):
        assert store.quarantine_exists(f"events.jsonl.quarantine-{number}")
    assert not store.quarantine_exists("events.jsonl.quarantine-4")
    assert not store.quarantine_exists("events.jsonl.quarantine\0-5")


@given(tail=st.binary(max_size=TAIL), written=st.binary(min_size=1, max_size=2 * TAIL))
def test_the_position_after_an_append_keeps_the_last_bytes_of_the_file(
    tail: bytes, written: bytes
) -> None:
    """The position after an append holds the last TAIL bytes of what was there and what was
    written, however short either is."""
    tip = Position(name="n", size=len(tail), identity=(1, 2), tail=tail, next_quarantine="q")
    event = Event("0" * 32, 1, (), (0, 1), "note.added", 1, {"text": "t"}, {})
    after = after_append(tip, [event], written)
    assert after.tail == (tail + written)[-TAIL:]
    assert after.size == len(tail) + len(written)
    assert (after.head, after.lamport, after.events, after.last) == ((event.id,), 1, 1, event.id)
