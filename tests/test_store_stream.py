"""Streaming reads and tip appends: replay's path must see exactly what a full read sees, and
an append after a tip must write exactly what an append after a full read writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import add_quarantine, make_store, note, raw_bytes, set_raw_bytes, skill
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import Conflict, LedgerDamaged
from ledger.log import file_store
from ledger.log.file_store import FileStore
from ledger.log.memory_store import MemoryStore
from ledger.log.position import Position
from ledger.log.record import Event, seal_batch
from ledger.log.store_interface import Store


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return make_store(request.param, tmp_path)


def _streamed(store: Store) -> tuple[list[Event], Position]:
    seen: list[Event] = []
    tip = store.stream(seen.append)
    return seen, tip


def _ledger(batch_sizes: list[int]) -> bytes:
    data, head, lamport = b"", (), 0
    for number, size in enumerate(batch_sizes):
        sealed, lines = seal_batch([note(f"b{number}.{i}") for i in range(size)], head, lamport)
        data += b"".join(lines)
        head, lamport = (sealed[-1].id,), sealed[-1].lamport
    return data


def _same_as_read(store: Store) -> Position:
    """Stream the store and check it against a full read; return the streamed tip."""
    seen, tip = _streamed(store)
    log = store.read()
    assert tuple(seen) == log.events
    assert (tip.head, tip.lamport, tip.size, tip.torn, tip.events) == (
        log.head,
        log.lamport,
        log.size,
        log.torn,
        len(log.events),
    )
    return tip


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(1, 3), min_size=0, max_size=6), data=st.data())
def test_stream_sees_what_read_sees_at_any_cut(sizes: list[int], data: st.DataObject) -> None:
    """Whatever the cut (a torn line, a torn batch, a clean end), streaming hands over exactly
    the events a full read returns, and the same head, counter, size and torn tail."""
    full = _ledger(sizes)
    cut = data.draw(st.integers(0, len(full)), label="cut")
    _same_as_read(MemoryStore(full[:cut]))


def test_stream_of_merged_branches_gives_both_heads(store: Store) -> None:
    """Two branches after one base stream as two heads, like a full read."""
    (base,), base_lines = seal_batch([note("base")], (), 0)
    _left, left_lines = seal_batch([note("left"), skill()], (base.id,), 1)
    _right, right_lines = seal_batch([note("right")], (base.id,), 1)
    set_raw_bytes(store, b"".join(base_lines + left_lines + right_lines))
    assert len(_same_as_read(store).head) == 2


def test_stream_refuses_damage_like_read(store: Store) -> None:
    """A damaged middle line is refused by streaming with the same path:line as a read."""
    data = bytearray(_ledger([1, 2, 1]))
    data[10] ^= 0x01
    set_raw_bytes(store, bytes(data))
    with pytest.raises(LedgerDamaged) as streamed:
        store.stream(lambda _event: None)
    with pytest.raises(LedgerDamaged) as read:
        store.read()
    assert streamed.value.message == read.value.message


def test_an_unfinished_batch_in_the_middle_is_damage_when_streaming(store: Store) -> None:
    """Parts of a batch missing before later batches: damage, not a torn tail."""
    full = _ledger([2, 1])
    lines = full.split(b"\n")
    set_raw_bytes(store, lines[0] + b"\n" + lines[2] + b"\n")
    with pytest.raises(LedgerDamaged):
        store.stream(lambda _event: None)


def test_a_torn_batch_never_reaches_the_sink(store: Store) -> None:
    """The first part of a batch whose second part was never written is not handed over."""
    full = _ledger([1, 2])
    set_raw_bytes(store, full[: full.rindex(b"\n", 0, len(full) - 1) + 1])
    seen, tip = _streamed(store)
    assert [e.data["text"] for e in seen] == ["b0.0"]
    assert tip.torn is not None and tip.torn.line == 2


def _twin(store: Store, tmp_path: Path) -> Store:
    """A second store of the same kind over the same bytes."""
    kind = "memory" if isinstance(store, MemoryStore) else "file"
    twin = make_store(kind, tmp_path / "twin")
    set_raw_bytes(twin, raw_bytes(store))
    return twin


def test_appends_after_tips_write_the_bytes_of_appends_after_reads(
    store: Store, tmp_path: Path
) -> None:
    """A writer that chains tips (each append's result tip feeds the next) writes the very
    bytes of a writer that reads the whole ledger before each append."""
    store.append([note("start")], expected_head=None)
    twin = _twin(store, tmp_path)
    tip = store.stream(lambda _event: None)
    for i in range(12):
        drafts = [note(f"n{i}")] * (1 + i % 3)
        result = store.append(drafts, expected_head=tip.head, position=tip)
        assert result.position is not None
        tip = result.position
        twin.append(drafts, expected_head=twin.read().head)
        assert raw_bytes(store) == raw_bytes(twin)
        assert (tip.head, tip.lamport, tip.size, tip.events) == (
            result.head,
            result.events[-1].lamport,
            len(raw_bytes(store)),
            len(store.read().events),
        )
    assert store.findings() == []


def test_an_append_after_a_fresh_tip_does_not_read_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The point of a tip: the append checks the file's end instead of reading it all."""
    store = FileStore(tmp_path / "events.jsonl")
    store.append([note("a"), note("b")], expected_head=None)
    tip = store.stream(lambda _event: None)

    def no_full_read(fd: int) -> bytes:
        raise AssertionError("the whole ledger was read again")

    monkeypatch.setattr(file_store, "_read_all", no_full_read)
    store.append([note("c")], expected_head=tip.head, position=tip)
    monkeypatch.undo()
    assert [e.data["text"] for e in store.read().events] == ["a", "b", "c"]


def test_a_stale_tip_conflicts_when_another_writer_appended(store: Store) -> None:
    """Another writer's batch after the tip: the append re-reads, sees the moved head and
    refuses with Conflict, writing nothing."""
    store.append([note("a")], expected_head=None)
    tip = store.stream(lambda _event: None)
    store.append([note("other writer")], expected_head=None)
    before = raw_bytes(store)
    with pytest.raises(Conflict):
        store.append([note("mine")], expected_head=tip.head, position=tip)
    assert raw_bytes(store) == before


def test_a_stale_tip_without_expected_head_appends_after_the_real_head(store: Store) -> None:
    """Without an expected head the append goes after what is really there, not the tip."""
    store.append([note("a")], expected_head=None)
    tip = store.stream(lambda _event: None)
    (other,) = store.append([note("other writer")], expected_head=None).events
    (mine,) = store.append([note("mine")], expected_head=None, position=tip).events
    assert mine.parents == (other.id,)
    assert store.findings() == []


def test_a_rewritten_ledger_of_the_same_size_is_read_again(store: Store, tmp_path: Path) -> None:
    """The ledger replaced by other bytes of the same length (a checkout of another branch):
    the tip no longer matches, so the append follows the real head."""
    store.append([note("aaaa")], expected_head=None)
    tip = store.stream(lambda _event: None)
    replaced = MemoryStore()
    replaced.append([note("bbbb")], expected_head=None)
    assert len(replaced.raw) == len(raw_bytes(store))
    set_raw_bytes(store, replaced.raw)
    (mine,) = store.append([note("mine")], expected_head=None, position=tip).events
    assert mine.parents == replaced.read().head
    assert store.findings() == []


def test_a_torn_tail_seen_by_the_tip_is_repaired_by_the_append(store: Store) -> None:
    """A tip read over a torn tail never takes the short path: the append quarantines it."""
    full = _ledger([1, 1])
    set_raw_bytes(store, full[:-5])
    tip = store.stream(lambda _event: None)
    assert tip.torn is not None
    result = store.append([note("next")], expected_head=tip.head, position=tip)
    assert len(result.repairs) == 1
    assert store.findings() == []


def test_a_quarantine_appearing_after_the_tip_is_recorded(store: Store) -> None:
    """A repair interrupted by a crash in another process after this tip was read (its
    quarantine file kept, its event never written) is recorded by this append."""
    store.append([note("a")], expected_head=None)
    tip = store.stream(lambda _event: None)
    add_quarantine(store, "events.jsonl.quarantine-1", b"torn bytes of a crashed writer")
    result = store.append([note("b")], expected_head=tip.head, position=tip)
    assert [r.data["quarantine"] for r in result.repairs] == ["events.jsonl.quarantine-1"]
    assert store.findings() == []


def test_an_unrecorded_quarantine_at_read_time_gives_no_short_path(store: Store) -> None:
    """A quarantine no repair event records, present when the tip is read: no stamp, so the
    append takes the full path and records it."""
    store.append([note("a")], expected_head=None)
    add_quarantine(store, "events.jsonl.quarantine-1", b"lost")
    tip = store.stream(lambda _event: None)
    assert tip.tail is None
    result = store.append([note("b")], expected_head=tip.head, position=tip)
    assert len(result.repairs) == 1


def test_the_first_append_through_an_empty_tip_creates_the_ledger(tmp_path: Path) -> None:
    """A tip of a ledger that does not exist yet appends the first batch, and durably."""
    store = FileStore(tmp_path / "custom" / "op" / "events.jsonl")
    tip = store.stream(lambda _event: None)
    assert (tip.events, tip.size, tip.head) == (0, 0, ())
    (event,) = store.append([note("first")], expected_head=(), position=tip).events
    assert event.lamport == 1
    assert store.path.exists() and store.read().events == (event,)
    assert store.findings() == []


def test_a_ledger_rewritten_in_place_is_read_again(tmp_path: Path) -> None:
    """The same file (same inode) rewritten in place with other bytes of the same size: its
    last bytes differ from the tip's, so the append reads it again."""
    store = FileStore(tmp_path / "events.jsonl")
    store.append([note("aaaa")], expected_head=None)
    tip = store.stream(lambda _event: None)
    replaced = MemoryStore()
    replaced.append([note("bbbb")], expected_head=None)
    with open(store.path, "r+b") as ledger:
        ledger.write(replaced.raw)
    (mine,) = store.append([note("mine")], expected_head=None, position=tip).events
    assert mine.parents == replaced.read().head
    assert store.findings() == []
