"""The attempts restored from the snapshot (ledger/domain/lazy_attempts.py) behave as the dict
a full replay builds, under every operation the code uses, and unpickle only the parts read."""

from __future__ import annotations

import array
import pickle
from itertools import islice

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.domain.lazy_attempts import LazyAttempts, SortedIds
from ledger.domain.state import Attempt, State
from ledger.domain.tail import added_since
from ledger.shell import snapshot_parts


def _attempt(n: int, status: str = "pending") -> Attempt:
    return Attempt(f"a{n:04d}", n + 1, "candidate", "incore", None, {"k": n}, status=status)


def _lazy(count: int, per_part: int, reads: list[int], *, sorted_ids: bool = False) -> LazyAttempts:
    """A map of `count` attempts whose parts are pickles, as in the snapshot; `reads` records
    each part unpickled. `sorted_ids`: each id found by binary search, as the snapshot does
    (`SortedIds`), not by a dict."""
    attempts = [_attempt(n) for n in range(count)]
    parts = [
        pickle.dumps(attempts[start : start + per_part]) for start in range(0, count, per_part)
    ]

    def load_part(n: int) -> list[Attempt]:
        reads.append(n)
        part: list[Attempt] = pickle.loads(parts[n])
        return part

    ids = [a.id for a in attempts]
    if not sorted_ids:
        return LazyAttempts(ids, per_part, load_part)
    ordered, positions = snapshot_parts.sorted_ids(ids[::-1])  # not in their sorted order
    found = array.array("i")
    found.frombytes(positions)
    index = SortedIds(ordered, array.array("i", [len(ids) - 1 - n for n in found]))
    return LazyAttempts(ids, per_part, load_part, index)


def _plain(count: int) -> dict[str, Attempt]:
    return {a.id: a for a in (_attempt(n) for n in range(count))}


KEYS = st.integers(min_value=0, max_value=40).map(lambda n: f"a{n:04d}")
OPERATIONS = st.one_of(
    st.tuples(st.just("get"), KEYS),
    st.tuples(st.just("getitem"), KEYS),
    st.tuples(st.just("in"), KEYS),
    st.tuples(st.just("set"), KEYS, st.sampled_from(["verified", "failed"])),
    st.tuples(st.just("del"), KEYS),
    st.tuples(st.just("newest"), st.integers(min_value=0, max_value=45)),
    st.tuples(st.just("added_since"), st.integers(min_value=0, max_value=45)),
    st.tuples(st.just("len")),
    st.tuples(st.just("keys")),
    st.tuples(st.just("reversed keys")),
    st.tuples(st.just("values")),
    st.tuples(st.just("items")),
    st.tuples(st.just("pickle")),
)


def _apply(attempts: object, operation: tuple[object, ...]) -> object:
    """What `operation` returns on `attempts` (a dict or the lazy map), or the error it raises."""
    name, *args = operation
    mapping = attempts
    assert isinstance(mapping, dict | LazyAttempts)
    try:
        if name == "get":
            return mapping.get(args[0])
        if name == "getitem":
            return mapping[args[0]]  # type: ignore[index]
        if name == "in":
            return args[0] in mapping
        if name == "set":
            key, status = args
            n = int(str(key)[1:])
            mapping[key] = _attempt(n, str(status))  # type: ignore[index]
            return None
        if name == "del":
            del mapping[args[0]]  # type: ignore[arg-type]
            return None
        if name == "newest":
            return list(islice(reversed(mapping.values()), args[0]))  # type: ignore[call-overload]
        if name == "added_since":
            return added_since(mapping, int(str(args[0])))  # type: ignore[arg-type]
        if name == "len":
            return len(mapping)
        if name == "keys":
            return list(mapping)
        if name == "reversed keys":
            return list(reversed(mapping))  # type: ignore[call-overload]
        if name == "values":
            return list(mapping.values())
        if name == "items":
            return list(mapping.items())
        if name == "pickle":
            again = pickle.loads(pickle.dumps(mapping))
            assert type(again) is dict  # what it stands for, not the map
            return again
    except KeyError as error:
        return ("KeyError", error.args)
    raise AssertionError(name)


@settings(max_examples=300, deadline=None)
@given(
    count=st.integers(min_value=0, max_value=30),
    per_part=st.integers(min_value=1, max_value=7),
    operations=st.lists(OPERATIONS, max_size=25),
    sorted_ids=st.booleans(),
)
def test_the_lazy_map_behaves_as_the_dict(
    count: int, per_part: int, operations: list[tuple[object, ...]], sorted_ids: bool
) -> None:
    reads: list[int] = []
    lazy, plain = _lazy(count, per_part, reads, sorted_ids=sorted_ids), _plain(count)
    for operation in operations:
        assert _apply(lazy, operation) == _apply(plain, operation), operation
        assert len(reads) == len(set(reads))  # each part unpickled once at most
    assert lazy == plain and plain == lazy
    assert list(lazy.items()) == list(plain.items())


def test_reading_one_attempt_unpickles_only_its_part() -> None:
    reads: list[int] = []
    lazy = _lazy(10, 3, reads)
    assert len(lazy) == 10 and "a0004" in lazy and "a0099" not in lazy and list(lazy)[-1] == "a0009"
    assert reads == []  # ids, length and membership come from the header
    assert lazy["a0004"].seq == 5 and lazy.get("a0005") is lazy["a0005"]
    assert reads == [1]
    assert lazy.get("a0099") is None and reads == [1]


def test_the_newest_attempts_unpickle_only_the_last_parts() -> None:
    reads: list[int] = []
    lazy = _lazy(10, 3, reads)
    lazy["a0010"] = _attempt(10)  # the fold of the tail: added at the end, nothing read
    assert reads == [] and len(lazy) == 11
    newest = [a.id for a in islice(reversed(lazy.values()), 3)]
    assert newest == ["a0010", "a0009", "a0008"] and reads == [3, 2]
    assert [a.id for a in added_since(lazy, 8)] == ["a0008", "a0009", "a0010"]
    assert reads == [3, 2]
    assert [a.seq for a in lazy.values()] == list(range(1, 12))
    assert sorted(reads) == [0, 1, 2, 3] and lazy.unread_parts() == 0


def test_a_value_set_before_its_part_was_read_is_kept() -> None:
    lazy = _lazy(6, 2, [])
    lazy["a0003"] = _attempt(3, "failed")
    assert lazy["a0003"].status == "failed" and lazy["a0002"].status == "pending"
    assert [a.status for a in lazy.values()].count("failed") == 1


def test_growing_while_iterated_raises_as_a_dict_does() -> None:
    def grow_while_iterated(attempts: LazyAttempts | dict[str, Attempt]) -> None:
        for key in attempts:
            attempts[key + "x"] = _attempt(9)

    for attempts in (_lazy(4, 2, []), _plain(4)):
        with pytest.raises(RuntimeError, match="changed size during iteration"):
            grow_while_iterated(attempts)


def test_a_part_that_is_not_the_one_listed_is_refused() -> None:
    lazy = LazyAttempts(["a0000", "a0001"], 2, lambda n: [_attempt(1), _attempt(0)])
    with pytest.raises(ValueError, match="not the one its header lists"):
        lazy["a0000"]


def test_a_state_holding_it_equals_and_pickles_as_the_replayed_one() -> None:
    lazy_state, plain_state = State(attempts=_lazy(5, 2, [])), State(attempts=_plain(5))
    assert lazy_state == plain_state
    again = pickle.loads(pickle.dumps(lazy_state))
    assert type(again.attempts) is dict and again == plain_state


def test_ids_found_by_binary_search_are_the_dicts() -> None:
    ids = [f"{n * 7919 % 1000:03d}-{n}" for n in range(50)]
    ordered, positions = snapshot_parts.sorted_ids(ids)
    found = array.array("i")
    found.frombytes(positions)
    index = SortedIds(ordered, found)
    assert dict(index.items()) == {key: n for n, key in enumerate(ids)}
    assert all(index[key] == n and key in index for n, key in enumerate(ids))
    assert index.get("nope") is None and "nope" not in index and 3 not in index
    with pytest.raises(KeyError):
        index["nope"]
    broken = SortedIds(ordered, array.array("i", [-1] * len(ids)))
    with pytest.raises(ValueError, match="name no attempt"):
        broken.get(ids[0])
