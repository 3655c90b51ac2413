"""A sorted run of fixed-width digests packed into one bytes object, searched in place.

Why: a table of 100k ids or keys as Python objects costs ~10 MB and a dict build on every
start; packed, it is one bytes object that a snapshot stores and loads as is, and a lookup is
a binary search over it (the walker's seen ids, ledger/log/lamport_table.py; R9's measured
configs, ledger/domain/lazy_measured.py).
"""

from __future__ import annotations


def index_of(run: bytes, width: int, count: int, digest: bytes) -> int:
    """The index of `digest` among the first `count` digests of `run` (each `width` bytes,
    in ascending order), or -1."""
    low, high = 0, count
    while low < high:
        middle = (low + high) // 2
        found = run[middle * width : (middle + 1) * width]
        if found == digest:
            return middle
        if found < digest:
            low = middle + 1
        else:
            high = middle
    return -1
