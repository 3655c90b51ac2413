"""R9's keys restored from the snapshot (ledger/domain/lazy_measured.py) behave as the dict a
full replay builds, under every operation the code uses, and load their texts only when
iterated: a lookup or a write loads none."""

from __future__ import annotations

import array
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.domain import lazy_measured
from ledger.domain.lazy_measured import KeyTexts, LazyMeasured
from ledger.domain.state import State


def _key(n: int) -> str:
    return f'{{"vec_tile_shape":[1,8,1,{n}]}}'


def _ids(count: int) -> list[str]:
    return [f"a{n:04d}" for n in range(count)]


def _plain(count: int) -> dict[str, str]:
    """`count` keys, in an order that is not the sorted one, the first measured by the
    baseline, the others by attempts."""
    ids = _ids(count)
    return {_key((n * 7) % 41): "baseline" if n == 0 else ids[n] for n in range(count)}


def _lazy(plain: dict[str, str], per_part: int, loads: list[int]) -> LazyMeasured:
    """`plain` as the snapshot restores it: its texts in parts (pickles); `loads` records each
    part loaded."""
    found = lazy_measured.frozen_table(plain, _ids(len(plain)))
    assert found is not None
    texts, table = found
    parts = [pickle.dumps(texts[s : s + per_part]) for s in range(0, len(texts), per_part)]

    def load_part(n: int) -> list[str]:
        loads.append(n)
        part: list[str] = pickle.loads(parts[n])
        return part

    table = pickle.loads(pickle.dumps(table))  # as kept in the header
    return lazy_measured.restored(
        table, _ids(len(plain)), KeyTexts(len(texts), per_part, load_part)
    )


KEYS = st.integers(min_value=0, max_value=45).map(_key)
VALUES = st.sampled_from(["baseline", "a0001", "a0042", "b9"])
OPERATIONS = st.one_of(
    st.tuples(st.just("get"), KEYS),
    st.tuples(st.just("getitem"), KEYS),
    st.tuples(st.just("in"), KEYS),
    st.tuples(st.just("in"), st.sampled_from([3, None, b"x", "", "{}"])),
    st.tuples(st.just("set"), KEYS, VALUES),
    st.tuples(st.just("del"), KEYS),
    st.tuples(st.just("clear")),
    st.tuples(st.just("len")),
    st.tuples(st.just("keys")),
    st.tuples(st.just("values")),
    st.tuples(st.just("items")),
    st.tuples(st.just("set of keys")),
    st.tuples(st.just("pickle")),
    st.tuples(st.just("equal")),
)


def _apply(measured: object, operation: tuple[object, ...]) -> object:
    """What `operation` returns on `measured` (a dict or the lazy map), or the error it raises."""
    name, *args = operation
    mapping = measured
    assert isinstance(mapping, dict | LazyMeasured)
    try:
        if name == "get":
            return mapping.get(str(args[0]))
        if name == "getitem":
            return mapping[str(args[0])]
        if name == "in":
            return args[0] in mapping
        if name == "set":
            mapping[str(args[0])] = str(args[1])
            return None
        if name == "del":
            del mapping[str(args[0])]
            return None
        if name == "clear":
            mapping.clear()
            return None
        if name == "len":
            return len(mapping)
        if name == "keys":
            return list(mapping)
        if name == "values":  # keys.py's rekey
            return list(mapping.values())
        if name == "items":  # timeline's baseline config, search_space's tile
            return list(mapping.items())
        if name == "set of keys":  # measure_ahead
            return {*mapping}
        if name == "pickle":
            again = pickle.loads(pickle.dumps(mapping))
            assert type(again) is dict  # what it stands for, not the map
            return list(again.items())
        if name == "equal":
            return (dict(mapping.items()) == mapping, mapping == dict(mapping.items()))
    except KeyError as error:
        return ("KeyError", error.args)
    raise AssertionError(name)


@settings(max_examples=300, deadline=None)
@given(
    count=st.integers(min_value=0, max_value=30),
    per_part=st.integers(min_value=1, max_value=7),
    operations=st.lists(OPERATIONS, max_size=25),
)
def test_the_lazy_map_behaves_as_the_dict(
    count: int, per_part: int, operations: list[tuple[object, ...]]
) -> None:
    loads: list[int] = []
    plain = _plain(count)
    lazy = _lazy(dict(plain), per_part, loads)
    for operation in operations:
        assert _apply(lazy, operation) == _apply(plain, operation), operation
        assert len(loads) == len(set(loads))  # each part loaded once at most
    assert lazy == plain and plain == lazy
    assert list(lazy.items()) == list(plain.items())


def test_lookups_and_writes_load_no_text() -> None:
    loads: list[int] = []
    plain = _plain(20)
    lazy = _lazy(plain, 3, loads)
    for key, value in plain.items():
        assert key in lazy and lazy.get(key) == value and lazy[key] == value
    assert _key(44) not in lazy and lazy.get(_key(44)) is None and len(lazy) == 20
    lazy[_key(44)] = "a0099"  # a new key, from the fold of the tail: at the end
    lazy[_key(0)] = "a0100"  # a snapshot key measured again: keeps its place
    assert lazy.get(_key(44)) == "a0099" and lazy[_key(0)] == "a0100" and len(lazy) == 21
    values = list(lazy.values())
    assert values[0] == "a0100" and values[-1] == "a0099"  # R9's values need no text either
    assert loads == [] and lazy.loaded_parts() == 0
    keys = list(lazy)
    assert keys[-1] == _key(44) and keys[0] == _key(0)
    assert sorted(loads) == list(range(7))


def test_values_are_the_attempts_own_id_strings() -> None:
    """A snapshot key's value is the attempt id string the restored attempts hold, not a copy."""
    plain = _plain(5)
    ids = _ids(5)
    found = lazy_measured.frozen_table(plain, ids)
    assert found is not None
    texts, table = found
    lazy = lazy_measured.restored(table, ids, KeyTexts(len(texts), 5, lambda n: texts))
    assert all(lazy[key] is ids[n] for n, key in enumerate(plain) if n)
    assert lazy[next(iter(plain))] == "baseline" and table["extras"] == ["baseline"]


def test_two_keys_with_one_digest_are_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table cannot tell them apart: no snapshot is written rather than a wrong lookup."""
    monkeypatch.setattr(lazy_measured, "key_digest", lambda text: b"\0" * 16)
    assert lazy_measured.frozen_table(_plain(2), _ids(2)) is None
    assert lazy_measured.frozen_table(_plain(1), _ids(1)) is not None


def test_a_part_that_is_not_the_one_listed_is_refused() -> None:
    found = lazy_measured.frozen_table(_plain(4), _ids(4))
    assert found is not None
    texts, table = found
    for wrong in ([], texts[:1], [1, 2], "text"):
        lazy = lazy_measured.restored(table, _ids(4), KeyTexts(4, 2, lambda n, w=wrong: w))
        with pytest.raises(ValueError, match="R9 keys"):
            list(lazy)


def test_a_table_that_does_not_match_its_keys_is_refused() -> None:
    found = lazy_measured.frozen_table(_plain(4), _ids(4))
    assert found is not None
    texts, table = found
    for changed in (
        {"count": 3},
        {"digests": table["digests"][:-1]},
        {"codes": table["codes"][:-4]},
        {"extras": [1]},
    ):
        with pytest.raises(ValueError, match="R9"):
            lazy_measured.restored(
                {**table, **changed}, _ids(4), KeyTexts(4, 2, lambda n: texts[2 * n : 2 * n + 2])
            )


def test_a_state_holding_it_equals_and_pickles_as_the_replayed_one() -> None:
    plain = _plain(6)
    lazy_state, plain_state = (
        State(measured_configs=_lazy(plain, 4, [])),
        State(measured_configs=plain),
    )
    assert lazy_state == plain_state
    again = pickle.loads(pickle.dumps(lazy_state))
    assert type(again.measured_configs) is dict and again == plain_state


def test_a_place_or_value_out_of_the_table_is_refused_when_used() -> None:
    """The table's places and codes are checked when a key is found (not all at the restore,
    which would cost every command): one out of range raises, never reads another key's."""
    plain = _plain(3)
    found = lazy_measured.frozen_table(plain, _ids(3))
    assert found is not None
    texts, table = found
    key = next(iter(plain))
    for changed, what in (
        ({"order": array.array("i", [-1, -1, -1]).tobytes()}, "names no key"),
        ({"codes": array.array("i", [-1, 99, 3]).tobytes()}, "name no attempt"),
    ):
        lazy = lazy_measured.restored(
            {**table, **changed}, _ids(3), KeyTexts(3, 3, lambda n: texts)
        )
        with pytest.raises(ValueError, match=what):
            lazy.get(key)
