"""The entries a State's insertion-ordered collections gained since a count, reached from the end.

Projections and deciders keep indexes in `State.derived` (see `ledger/projections/walk.py`)
and extend them with what the fold added since they last looked. Attempts and points are
only ever added at the end of their dicts, so "what was added" is the last `len - seen`
entries; walking to them from the front (`islice`) would cost O(all), from the back O(new).
"""

from __future__ import annotations

from itertools import islice
from typing import TypeVar

V = TypeVar("V")


def added_since(entries: dict[str, V], seen: int) -> list[V]:
    """The values after the first `seen` of an insertion-ordered dict, oldest first."""
    count = len(entries) - seen
    if count <= 0:
        return []
    newest_first = list(islice(reversed(entries.values()), count))
    newest_first.reverse()
    return newest_first
