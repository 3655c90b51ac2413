"""The binary search over a packed sorted digest run finds exactly the digests in it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ledger.log.packed_digests import index_of

WIDTH = 4
digests = st.binary(min_size=WIDTH, max_size=WIDTH)


@given(st.sets(digests, max_size=40), digests)
def test_index_of_agrees_with_a_list_search(stored: set[bytes], probe: bytes) -> None:
    ordered = sorted(stored)
    run = b"".join(ordered)
    for at, digest in enumerate(ordered):
        assert index_of(run, WIDTH, len(ordered), digest) == at
    expected = ordered.index(probe) if probe in stored else -1
    assert index_of(run, WIDTH, len(ordered), probe) == expected


def test_only_the_first_count_digests_are_searched() -> None:
    run = b"aaaa" + b"bbbb" + b"cccc"
    assert index_of(run, WIDTH, 2, b"cccc") == -1
    assert index_of(run, WIDTH, 3, b"cccc") == 2
