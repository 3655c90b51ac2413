"""Merging damaged or torn sides, normalizing a ledger, and the canonical-order finding."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from factories import draft, note

from ledger.errors import Conflict, LedgerDamaged
from ledger.git import merge
from ledger.log import chain, codec, upcast
from ledger.log.file_store import FileStore
from ledger.log.memory_store import MemoryStore
from ledger.log.record import converter
from ledger.schema.events import NoteAdded


def _branches() -> tuple[bytes, bytes, bytes]:
    """A trunk and two branches that each appended two batches after it."""
    trunk = MemoryStore()
    trunk.append([note("root")], expected_head=None)
    ours, theirs = MemoryStore(trunk.raw), MemoryStore(trunk.raw)
    ours.append([note("o1"), note("o2")], expected_head=None)
    ours.append([note("o3")], expected_head=None)
    theirs.append([note("t1")], expected_head=None)
    theirs.append([note("t2"), note("t3")], expected_head=None)
    return trunk.raw, ours.raw, theirs.raw


def _union(ours: bytes, theirs: bytes, base: bytes) -> bytes:
    """What git's `merge=union` leaves: the common part, then our new lines, then theirs."""
    return base + ours[len(base) :] + theirs[len(base) :]


# --- merge: damaged and torn sides ---------------------------------------------------------------


def test_a_damaged_side_is_refused_naming_the_side_and_line() -> None:
    base, ours, theirs = _branches()
    lines = theirs.split(b"\n")
    lines[1] = lines[1].replace(b'"t1"', b'"T1"')
    with pytest.raises(LedgerDamaged, match=r"custom/op/events.jsonl \(theirs\):2: ") as caught:
        merge.merge(base, ours, b"\n".join(lines), "custom/op/events.jsonl")
    assert caught.value.code == 7


def test_a_torn_tail_on_a_side_is_left_out_and_reported() -> None:
    base, ours, theirs = _branches()
    torn = theirs + b'{"id":"0123'
    merged = merge.merge(base, ours, torn, "events.jsonl")
    assert merged.data == merge.merge(base, ours, theirs).data
    (note_text,) = merged.notes
    assert note_text.startswith("events.jsonl (theirs):5: torn tail of 11 bytes left out")


def test_a_torn_batch_on_a_side_is_left_out() -> None:
    """A last batch missing its final part is torn too: none of its events are merged."""
    base, ours, theirs = _branches()
    cut = theirs[: theirs[:-1].rfind(b"\n") + 1]  # drop t3: the t2-t3 batch is incomplete
    merged = merge.merge(base, ours, cut)
    texts = [e.data["text"] for e in chain.scan(merged.data, "t").events]
    assert "t2" not in texts and "t1" in texts
    assert "1 of its 2 events" in merged.notes[0]


def test_the_base_does_not_change_the_result() -> None:
    base, ours, theirs = _branches()
    expected = merge.merge(base, ours, theirs).data
    assert merge.merge(b"", ours, theirs).data == expected
    assert merge.merge(b"garbage\n", ours, theirs).data == expected
    reported = merge.merge(ours, base, theirs)  # the base has ours' events: neither side does
    assert reported.notes == (
        "events.jsonl (base): 3 event(s) of the common ancestor are on neither side and stay out",
    )


def test_old_schema_lines_keep_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """An event of an older schema version is merged and normalized without being upcast
    into new bytes (its content id is over its own bytes)."""
    monkeypatch.setitem(upcast.UPCASTERS, ("note.added", 0), lambda data: {"text": data["body"]})
    base, _ours, theirs = _branches()
    root = chain.scan(base, "t").events[0]
    body = codec.canonical_json(
        {
            "lamport": 2,
            "parents": [root.id],
            "part": [0, 1],
            "payload": {"body": "old words"},
            "provenance": converter().unstructure(note().provenance),
            "schema": 0,
            "type": "note.added",
        }
    )
    line = ('{"id":"' + codec.content_id(body) + '",' + body[1:] + "\n").encode()
    old = base + line
    merged = merge.merge(base, old, theirs).data
    assert line in merged
    assert merge.normalize(_union(old, theirs, base)).data == merged
    (event,) = [e for e in chain.scan(merged, "t").events if e.data.get("text") == "old words"]
    assert event.schema == 1  # upcast on read, bytes untouched


# --- normalize --------------------------------------------------------------------------------


def test_a_union_merge_normalizes_to_the_driver_merge() -> None:
    base, ours, theirs = _branches()
    union = _union(ours, theirs, base)
    done = merge.normalize(union)
    assert done.data == merge.merge(base, ours, theirs).data
    assert (done.duplicates, done.reordered) == (0, True)


def test_normalize_keeps_a_torn_tail_at_the_end() -> None:
    base, ours, theirs = _branches()
    union = _union(ours, theirs, base) + b'{"id":"ab'
    done = merge.normalize(union)
    assert done.data == merge.merge(base, ours, theirs).data + b'{"id":"ab'
    assert done.torn == 9
    assert chain.scan(done.data, "t").torn is not None


def test_conflict_markers_are_refused_naming_the_line() -> None:
    base, ours, theirs = _branches()
    conflicted = (
        base
        + b"<<<<<<< ours\n"
        + ours[len(base) :]
        + b"=======\n"
        + theirs[len(base) :]
        + b">>>>>>> theirs\n"
    )
    with pytest.raises(LedgerDamaged, match=r"^x/events.jsonl:2: a git conflict marker"):
        merge.normalize(conflicted, "x/events.jsonl")
    with pytest.raises(LedgerDamaged, match=r"x/events.jsonl:2: "):
        chain.scan(conflicted, "x/events.jsonl")


def test_a_crlf_checkout_is_refused_with_the_fix() -> None:
    _base, ours, _theirs = _branches()
    crlf = ours.replace(b"\n", b"\r\n")
    with pytest.raises(LedgerDamaged, match=r"events.jsonl:1: .*CR LF.*git-setup"):
        chain.scan(crlf, "events.jsonl")
    with pytest.raises(LedgerDamaged, match=r"events.jsonl:1: .*CR LF"):
        merge.normalize(crlf, "events.jsonl")


def test_lines_that_cannot_form_a_ledger_are_refused() -> None:
    """Every line is valid alone, but one's parent is missing: no order makes a ledger."""
    base, ours, theirs = _branches()
    missing_parent = b"\n".join(theirs.split(b"\n")[2:])  # t1 and the trunk are gone
    with pytest.raises(LedgerDamaged, match="do not form a ledger"):
        merge.normalize(base + ours[len(base) :] + missing_parent)


def _file_store(tmp_path: Path, data: bytes) -> FileStore:
    path = tmp_path / "custom" / "op" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return FileStore(path)


def test_normalize_file_rewrites_atomically_and_appends_continue(tmp_path: Path) -> None:
    base, ours, theirs = _branches()
    union = _union(ours, theirs, base)
    store = _file_store(tmp_path, union + theirs[len(base) :].split(b"\n")[0] + b"\n")
    assert merge.order_findings(store, "op") == [
        f"{store.path}: not in canonical order (1 repeated line and events out of canonical "
        "order), as a merge without the tune-ledger merge driver leaves it (e.g. "
        "`merge=union` or a server-side merge); run `tune-ledger normalize op` and commit "
        "the result"
    ]
    os.chmod(store.path, 0o640)
    done = merge.normalize_file(store)
    assert (done.duplicates, done.reordered) == (1, True)
    assert store.path.read_bytes() == merge.merge(base, ours, theirs).data
    assert store.path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in store.path.parent.iterdir()) == [
        "events.jsonl",
        "events.jsonl.lock",
    ]
    assert merge.order_findings(store, "op") == []
    heads = store.read().head
    (event,) = store.append([draft(NoteAdded(text="after"))], expected_head=heads).events
    assert event.parents == heads and len(heads) == 2


def test_normalizing_a_canonical_ledger_writes_nothing(tmp_path: Path) -> None:
    _base, ours, _theirs = _branches()
    store = _file_store(tmp_path, ours)
    inode = store.path.stat().st_ino
    done = merge.normalize_file(store)
    assert (done.duplicates, done.reordered, done.describe()) == (0, False, "")
    assert store.path.stat().st_ino == inode


def test_normalize_file_refuses_damage_and_writes_nothing(tmp_path: Path) -> None:
    base, ours, theirs = _branches()
    damaged = _union(ours, theirs, base).replace(b'"o2"', b'"O2"')
    store = _file_store(tmp_path, damaged)
    with pytest.raises(LedgerDamaged, match=r"events.jsonl:3: content id") as caught:
        merge.normalize_file(store)
    assert caught.value.code == 7
    assert store.path.read_bytes() == damaged
    with pytest.raises(LedgerDamaged):
        merge.order_findings(store, "op")


def test_causal_replay_gives_each_batch_its_own_branch_state() -> None:
    """A batch on a merged branch is decided on its own past: without the other branch's."""
    base, ours, theirs = _branches()
    events = chain.scan(merge.merge(base, ours, theirs).data, "t").events
    from ledger.shell.audit import batches

    causal = merge.CausalReplay(events)
    seen: dict[str, Any] = {}
    for _index, batch in batches(events):
        state = causal.before(batch)
        seen[batch[0].data["text"]] = list(state.notes)
        for event in batch:
            from ledger.domain.replay import evolve

            evolve(state, event)
        causal.after(batch, state)
    assert seen["o3"] == ["root", "o1", "o2"]
    assert seen["t2"] == ["root", "t1"]
    assert seen["t1"] == ["root"] and seen["o1"] == ["root"]


def test_normalize_file_reads_again_after_an_append_between_read_and_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rewrite is a compare-and-swap: an append that lands after normalize read the
    ledger is not lost; normalize reads again and rewrites the ledger with it."""
    base, ours, theirs = _branches()
    store = _file_store(tmp_path, _union(ours, theirs, base))
    real_read = store.read_bytes
    reads: list[bytes] = []

    def read_then_another_writer_appends() -> bytes:
        data = real_read()
        reads.append(data)
        if len(reads) == 1:
            store.append([draft(NoteAdded(text="late"))], expected_head=None)
        return data

    monkeypatch.setattr(store, "read_bytes", read_then_another_writer_appends)
    done = merge.normalize_file(store)
    monkeypatch.undo()
    assert len(reads) == 2 and reads[1].startswith(reads[0]) and reads[1] != reads[0]
    texts = [e.data["text"] for e in store.read().events]
    assert sorted(texts) == ["late", "o1", "o2", "o3", "root", "t1", "t2", "t3"]
    assert done.events == 8 and merge.order_findings(store, "op") == []


def test_normalize_file_gives_up_with_conflict_when_writers_never_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append after every read: a few tries, then Conflict, and every append is kept."""
    base, ours, theirs = _branches()
    store = _file_store(tmp_path, _union(ours, theirs, base))
    real_read = store.read_bytes

    def read_then_another_writer_appends() -> bytes:
        data = real_read()
        store.append([draft(NoteAdded(text="late"))], expected_head=None)
        return data

    monkeypatch.setattr(store, "read_bytes", read_then_another_writer_appends)
    with pytest.raises(Conflict, match="changed since it was read"):
        merge.normalize_file(store)
    monkeypatch.undo()
    texts = [e.data["text"] for e in store.read().events]
    assert texts.count("late") == 3 and len(texts) == 10
