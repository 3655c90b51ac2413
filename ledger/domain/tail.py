"""The entries a State's insertion-ordered collections gained since a count, reached from the end.

Projections and deciders keep indexes in `State.derived` (see `ledger/projections/walk.py`)
and extend them with what the fold added since they last looked. Attempts and points are
only ever added at the end of their dicts, so "what was added" is the last `len - seen`
entries; walking to them from the front (`islice`) would cost O(all), from the back O(new)
(and, for attempts restored from the snapshot, unpickles only the parts that hold them:
ledger/domain/lazy_attempts.py).
"""

from __future__ import annotations

from collections.abc import Reversible
from itertools import islice
from typing import Protocol, TypeVar

V = TypeVar("V")
V_co = TypeVar("V_co", covariant=True)


class Entries(Protocol[V_co]):
    """An insertion-ordered mapping (a dict, `State.attempts`) as `added_since` reads it."""

    def __len__(self) -> int: ...
    def values(self) -> Reversible[V_co]: ...


def added_since(entries: Entries[V], seen: int) -> list[V]:
    """The values after the first `seen` of an insertion-ordered dict, oldest first."""
    count = len(entries) - seen
    if count <= 0:
        return []
    newest_first = list(islice(reversed(entries.values()), count))
    newest_first.reverse()
    return newest_first
