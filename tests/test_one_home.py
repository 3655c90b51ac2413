"""One home per rule: what MEMORY.md and status show is what the deciders enforce (R3, R7, R8)."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

from ledger.domain.samples import median


@given(st.lists(st.floats(min_value=1e-3, max_value=1e9), min_size=1, max_size=40))
def test_the_one_median_equals_the_standard_librarys(samples: list[float]) -> None:
    assert median(samples) == float(statistics.median(samples))
    assert median(list(reversed(samples))) == median(samples)
