"""Concurrent writers: the file lock serializes appends from several processes."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path

from factories import note

from ledger.log.file_store import FileStore

WRITERS = 4
APPENDS = 250


def _write(path: str, writer: int) -> None:
    store = FileStore(path)
    for i in range(APPENDS):
        store.append([note(f"writer {writer} append {i}")], expected_head=None)


def test_four_processes_append_a_thousand_events_into_one_valid_chain(tmp_path: Path) -> None:
    """4 processes × 250 appends give exactly 1000 events, each once, in one valid chain."""
    path = tmp_path / "custom" / "op" / "events.jsonl"
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_write, args=(str(path), w)) for w in range(WRITERS)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=120)
    assert [writer.exitcode for writer in writers] == [0] * WRITERS

    store = FileStore(path)
    log = store.read()
    texts = Counter(event.data["text"] for event in log.events)
    assert len(log.events) == WRITERS * APPENDS
    assert set(texts.values()) == {1}
    assert log.torn is None
    # Under the lock every append saw the one head before it: one chain, counters 1..1000.
    assert [event.lamport for event in log.events] == list(range(1, WRITERS * APPENDS + 1))
    assert len(log.head) == 1
    assert store.findings() == []
    # Each writer's own appends stay in the order it made them.
    for number in range(WRITERS):
        mine = [t for t in texts if t.startswith(f"writer {number} ")]
        order = [
            int(t.rsplit(" ", 1)[1]) for t in (e.data["text"] for e in log.events) if t in mine
        ]
        assert order == list(range(APPENDS))
