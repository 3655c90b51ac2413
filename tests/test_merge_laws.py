"""Merge laws (DESIGN §4): commutative, associative, idempotent, loses nothing, stays canonical.

Histories are generated the way they happen: stores that append batches, fork (a copy of a
ledger, like a branch) and merge; every ledger is written by the real store.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from factories import draft, note
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import LedgerDamaged
from ledger.git import merge
from ledger.log import chain, codec, integrity
from ledger.log.memory_store import MemoryStore
from ledger.schema.events import NoteAdded

# A small alphabet of texts; events two ledgers share (a common prefix, an earlier merge)
# have the same content ids on both sides, and the merge must keep one copy.
TEXTS = st.sampled_from(["a", "b", "c", "tile 32", "tile 64"])
BATCH = st.lists(TEXTS, min_size=1, max_size=3)
STEP: st.SearchStrategy[tuple[str, int, Any]] = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 5), BATCH),
    st.tuples(st.just("fork"), st.integers(0, 5), st.just([])),
    st.tuples(st.just("merge"), st.integers(0, 5), st.integers(0, 5)),
)


def _history(steps: list[tuple[str, int, Any]]) -> list[bytes]:
    """Run the steps on a growing set of ledgers (one to start); return at least three."""
    stores = [MemoryStore()]
    stores[0].append([note("root")], expected_head=None)
    for number, (kind, index, arg) in enumerate(steps):
        store = stores[index % len(stores)]
        if kind == "append":
            assert isinstance(arg, list)
            # Each command has its own provenance (its time and process), as in real use.
            store.append(
                [draft(NoteAdded(text=text), pid=number) for text in arg], expected_head=None
            )
        elif kind == "fork":
            stores.append(MemoryStore(store.raw))
        else:
            assert isinstance(arg, int)
            other = stores[arg % len(stores)]
            store.set_raw(merge.merge(b"", store.raw, other.raw).data)
    while len(stores) < 3:
        stores.append(MemoryStore(stores[-1].raw))
        stores[-1].append([note(f"extra {len(stores)}")], expected_head=None)
    return [store.raw for store in stores]


def _m(ours: bytes, theirs: bytes) -> bytes:
    return merge.merge(b"", ours, theirs).data


def _ids(data: bytes) -> set[str]:
    return {event.id for event in chain.scan(data, "t").events}


HISTORIES = st.lists(STEP, max_size=14).map(_history)


@settings(max_examples=150, deadline=None)
@given(HISTORIES)
def test_merge_is_commutative(ledgers: list[bytes]) -> None:
    """The result does not depend on which side is "ours"."""
    a, b = ledgers[0], ledgers[-1]
    assert _m(a, b) == _m(b, a)


@settings(max_examples=150, deadline=None)
@given(HISTORIES)
def test_merge_is_associative(ledgers: list[bytes]) -> None:
    """Merging three branches in any grouping gives the same bytes."""
    a, b, c = ledgers[0], ledgers[1], ledgers[-1]
    assert _m(_m(a, b), c) == _m(a, _m(b, c)) == merge.merge_many([a, b, c])


@settings(max_examples=150, deadline=None)
@given(HISTORIES)
def test_merge_is_idempotent_and_every_ledger_is_canonical(ledgers: list[bytes]) -> None:
    """A ledger merged with itself (or with what it contains) is unchanged, byte for byte."""
    for data in ledgers:
        assert _m(data, data) == data
        assert merge.normalize(data).data == data
    a, b = ledgers[0], ledgers[1]
    merged = _m(a, b)
    assert _m(merged, a) == merged
    assert _m(merged, b) == merged


@settings(max_examples=150, deadline=None)
@given(HISTORIES)
def test_merge_loses_nothing_and_keeps_each_event_once(ledgers: list[bytes]) -> None:
    """Every event of either side is in the result exactly once, with its line's bytes."""
    a, b = ledgers[0], ledgers[-1]
    merged = _m(a, b)
    lines = merged.split(b"\n")[:-1]
    assert len(lines) == len(set(lines))
    assert set(lines) == set(a.split(b"\n")[:-1]) | set(b.split(b"\n")[:-1])
    assert _ids(merged) == _ids(a) | _ids(b)
    assert integrity.check(merged).findings == ()


@settings(max_examples=100, deadline=None)
@given(HISTORIES)
def test_the_next_append_after_a_merge_follows_every_head(ledgers: list[bytes]) -> None:
    """The store's next batch names all heads of the merged ledger, closing the DAG."""
    merged = _m(ledgers[0], ledgers[-1])
    heads = chain.scan(merged, "t").head
    store = MemoryStore(merged)
    (event,) = store.append([note("after the merge")], expected_head=heads).events
    assert event.parents == heads
    log = store.read()
    assert log.head == (event.id,)
    assert merge.normalize(store.raw).data == store.raw


@settings(max_examples=100, deadline=None)
@given(HISTORIES, st.randoms(use_true_random=False), st.integers(0, 5))
def test_normalize_undoes_any_shuffle_with_repeats(
    ledgers: list[bytes], rng: random.Random, repeats: int
) -> None:
    """Lines interleaved and repeated (as `merge=union` leaves them) normalize to the merge."""
    merged = _m(ledgers[0], ledgers[-1])
    lines = merged.split(b"\n")[:-1]
    shuffled = lines + [rng.choice(lines) for _ in range(repeats)]
    rng.shuffle(shuffled)
    union = b"".join(line + b"\n" for line in shuffled)
    done = merge.normalize(union)
    assert done.data == merged
    assert done.duplicates == repeats


def test_identical_batches_on_both_sides_are_kept_once() -> None:
    """The same batch on both sides (a cherry-picked commit's events) is kept once."""
    trunk = MemoryStore()
    trunk.append([note("root")], expected_head=None)
    ours, theirs = MemoryStore(trunk.raw), MemoryStore(trunk.raw)
    for store in (ours, theirs):
        store.append([note("same"), note("batch")], expected_head=None)
    theirs.append([note("theirs only")], expected_head=None)
    merged = merge.merge(trunk.raw, ours.raw, theirs.raw)
    assert merged.data == theirs.raw
    assert (merged.common, merged.ours_only, merged.theirs_only) == (3, 0, 1)


def test_batches_stay_together_in_first_event_order() -> None:
    """A command's events are never interleaved with another branch's (replay applies whole
    commands), and batches sort by their first event's (Lamport counter, id)."""
    trunk = MemoryStore()
    trunk.append([note("root")], expected_head=None)
    ours, theirs = MemoryStore(trunk.raw), MemoryStore(trunk.raw)
    ours.append([note("o1"), note("o2"), note("o3")], expected_head=None)
    theirs.append([note("t1"), note("t2")], expected_head=None)
    merged = chain.scan(merge.merge(b"", ours.raw, theirs.raw).data, "t")
    texts = [event.data.get("text") for event in merged.events]
    o_first, t_first = ours.read().events[1], theirs.read().events[1]
    o_batch, t_batch = ["o1", "o2", "o3"], ["t1", "t2"]
    expected = ["root", *(o_batch + t_batch if o_first.id < t_first.id else t_batch + o_batch)]
    assert texts == expected


def test_lines_are_never_re_encoded() -> None:
    """A valid line whose bytes are not what today's encoder writes keeps its bytes."""
    trunk = MemoryStore()
    trunk.append([note("root")], expected_head=None)
    (root,) = trunk.read().events
    # 1e16 as written by another encoder (the standard library writes 1e+16): the content id
    # is over the raw bytes, so the line verifies as it is and must survive byte for byte.
    body = (
        '{"lamport":2,"parents":["' + root.id + '"],"part":[0,1],"payload":{"key":"x",'
        '"reason":"","value":1E16},"provenance":'
        + codec.canonical_json(_provenance())
        + ',"schema":1,"type":"policy.set"}'
    )
    line = ('{"id":"' + codec.content_id(body) + '",' + body[1:]).encode()
    ours = trunk.raw + line + b"\n"
    theirs = MemoryStore(trunk.raw)
    theirs.append([draft(NoteAdded(text="theirs"))], expected_head=None)
    merged = merge.merge(trunk.raw, ours, theirs.raw).data
    assert line + b"\n" in merged
    assert not codec.is_canonical_line(line)


def test_batches_that_share_only_their_first_event_are_refused() -> None:
    """Two different commands whose first events are byte-identical (same data, parents and
    provenance to the microsecond, which real provenance makes practically impossible)
    cannot be ordered into a valid ledger: the merge refuses instead of guessing."""
    trunk = MemoryStore()
    trunk.append([note("root")], expected_head=None)
    ours, theirs = MemoryStore(trunk.raw), MemoryStore(trunk.raw)
    ours.append([note("same"), note("ours")], expected_head=None)
    theirs.append([note("same"), note("theirs")], expected_head=None)
    with pytest.raises(LedgerDamaged, match="do not form a ledger"):
        merge.merge(trunk.raw, ours.raw, theirs.raw)


def _provenance() -> dict[str, object]:
    from ledger.log.record import converter

    unstructured: dict[str, object] = converter().unstructure(note().provenance)
    return unstructured
