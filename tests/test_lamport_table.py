"""The compact table of seen ids a state snapshot's walker carries (ledger/log/lamport_table.py):
after a pickle round trip, and with ids added since, it answers every lookup a dict does."""

from __future__ import annotations

import hashlib
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.log.lamport_table import LamportTable, compacted


def _id(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()[:32]


@given(
    before=st.dictionaries(st.integers(0, 500), st.integers(1, 10**12), max_size=60),
    after=st.dictionaries(st.integers(501, 900), st.integers(1, 10**12), max_size=20),
    later=st.dictionaries(st.integers(901, 1200), st.integers(1, 10**12), max_size=10),
    probes=st.lists(st.integers(0, 1300), max_size=30),
)
def test_lookups_match_a_dict(
    before: dict[int, int], after: dict[int, int], later: dict[int, int], probes: list[int]
) -> None:
    plain = {_id(n): v for n, v in before.items()}
    table = pickle.loads(pickle.dumps(compacted(plain)))
    assert isinstance(table, LamportTable) and not dict.__len__(table)
    for n, v in after.items():  # the tail a resumed walker verifies
        table[_id(n)] = v
        plain[_id(n)] = v
    table = pickle.loads(pickle.dumps(table))  # the next snapshot, merged
    for n, v in later.items():
        table[_id(n)] = v
        plain[_id(n)] = v
    assert len(table) == len(plain)
    for n in [*before, *after, *later, *probes]:
        key = _id(n)
        assert (key in table) == (key in plain)
        assert table.get(key) == plain.get(key)
        if key in plain:
            assert table[key] == plain[key]
        else:
            with pytest.raises(KeyError):
                table[key]


def test_only_the_exact_id_is_found() -> None:
    """Upper case, short, non-hex or non-string keys name no stored id (a parent in a line
    is whatever text it holds)."""
    key = _id(1)
    table = pickle.loads(pickle.dumps(compacted({key: 7})))
    assert table[key] == 7 and key in table
    for other in (key.upper(), key[:-1], key[:-1] + "g", None, 7, b"x"):
        assert other not in table
        assert table.get(other) is None  # type: ignore[arg-type]
    assert table.setdefault(key, 9) == 7
    assert table.setdefault(_id(2), 9) == 9 and table[_id(2)] == 9
