"""`State.attempts` restored from the snapshot: attempts unpickled only as they are read.

The snapshot (ledger/shell/state_snapshot.py) holds the attempts in parts of a few hundred
each. Unpickling all of them cost ~35 MB and ~0.08 s at 100k events (32k attempts), while a
writing command reads only a few: the pending one, the best, the newest ones the projections
extend their indexes from (ledger/domain/tail.py reads from the end). This map knows every
id in order and which part holds it, and unpickles a part the first time one of its attempts
is read; attempts the fold of the tail adds after them are held as a dict holds them.

It means what a dict means for every operation (tests/test_lazy_attempts.py compares them):
reading keys, the length and `in` unpickle nothing; reading a value unpickles its part;
`reversed(values())` unpickles parts from the end as it goes; setting a new id adds it at
the end; deleting one first gathers every attempt into one dict (no command deletes one). It
pickles as the plain dict it stands for. A full replay builds a plain dict: its hot loop
never pays for this.
"""

from __future__ import annotations

import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, MutableMapping, ValuesView

from ledger.domain.state import Attempt

# Unpickles part `n` of the attempts: those at positions n * per_part up to the next part's.
LoadPart = Callable[[int], list[Attempt]]


class LazyAttempts(MutableMapping[str, Attempt]):
    """Attempt id -> Attempt in the order started, each part unpickled when first read."""

    def __init__(
        self,
        ids: list[str],
        per_part: int,
        load_part: LoadPart,
        positions: Mapping[str, int] | None = None,
    ) -> None:
        self._ids = ids  # the snapshot's attempts, in order
        # Each id's position in `ids` (`SortedIds` when the snapshot keeps them sorted).
        self._position: Mapping[str, int] = (
            dict(zip(ids, range(len(ids)), strict=True)) if positions is None else positions
        )
        self._held: list[Attempt | None] = [None] * len(ids)  # None: its part not read yet
        self._per_part = per_part
        self._unread = -(-len(ids) // per_part)  # parts not unpickled yet
        # Dropped once every part was read: it keeps the snapshot's bytes.
        self._load_part: LoadPart | None = load_part if ids else None
        # Attempts added after the snapshot's (and all of them, once one was deleted).
        self._added: dict[str, Attempt] = {}

    # --- reading one ------------------------------------------------------------------------

    def __getitem__(self, key: str) -> Attempt:
        found = self._added.get(key)
        if found is not None:
            return found
        return self._at(self._position[key])

    def __contains__(self, key: object) -> bool:
        return key in self._added or key in self._position

    def __len__(self) -> int:
        return len(self._ids) + len(self._added)

    def _at(self, position: int) -> Attempt:
        attempt = self._held[position]
        if attempt is None:
            self._read_part(position // self._per_part)
            attempt = self._held[position]
            assert attempt is not None
        return attempt

    def _read_part(self, n: int) -> None:
        assert self._load_part is not None  # a part is unread only while the loader is kept
        start = n * self._per_part
        part = self._load_part(n)
        expected = self._ids[start : start + self._per_part]
        if [a.id for a in part] != expected:
            raise ValueError(f"part {n} of the snapshot's attempts is not the one its header lists")
        for offset, attempt in enumerate(part):
            if self._held[start + offset] is None:  # a value set since stays
                self._held[start + offset] = attempt
        self._unread -= 1
        if self._unread == 0:
            self._load_part = None

    # --- reading them all, in order -----------------------------------------------------------

    def __iter__(self) -> Iterator[str]:
        size = len(self)
        for key in self._ids:
            yield key
            _unchanged(self, size)
        yield from self._added  # a dict raises itself when it grows meanwhile

    def __reversed__(self) -> Iterator[str]:
        size = len(self)
        yield from reversed(self._added)
        for key in reversed(self._ids):
            _unchanged(self, size)
            yield key

    def values(self) -> _Values:
        return _Values(self)

    def _values(self, newest_first: bool) -> Iterator[Attempt]:
        size = len(self)
        positions = range(len(self._ids))
        if newest_first:
            yield from reversed(self._added.values())
        for position in reversed(positions) if newest_first else positions:
            _unchanged(self, size)
            yield self._at(position)
        if not newest_first:
            yield from self._added.values()

    # --- changing ---------------------------------------------------------------------------

    def __setitem__(self, key: str, value: Attempt) -> None:
        position = self._position.get(key)
        if position is None:
            self._added[key] = value
            return
        self._at(position)  # its part read first, so reading it later cannot undo this
        self._held[position] = value

    def __delitem__(self, key: str) -> None:
        # No command deletes an attempt: a dict of them all keeps this simple.
        self._gather()
        del self._added[key]

    def _gather(self) -> None:
        """Hold every attempt in `_added`, in order, as a plain dict would."""
        if not self._ids:
            return
        gathered = {key: self._at(n) for n, key in enumerate(self._ids)}
        gathered.update(self._added)
        self._ids, self._position, self._held, self._added = [], {}, [], gathered

    # --- what a dict also is ------------------------------------------------------------------

    def __reduce__(self) -> tuple[type, tuple[list[tuple[str, Attempt]]]]:
        return dict, (list(self.items()),)

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def unread_parts(self) -> int:
        """How many parts of the snapshot's attempts were not unpickled yet."""
        return self._unread


def _unchanged(attempts: LazyAttempts, size: int) -> None:
    if len(attempts) != size:
        raise RuntimeError("dictionary changed size during iteration")


class _Values(ValuesView[Attempt]):
    """`values()`: the attempts in order, and from the end without reading the others."""

    _mapping: LazyAttempts

    def __iter__(self) -> Iterator[Attempt]:
        return self._mapping._values(newest_first=False)

    def __reversed__(self) -> Iterator[Attempt]:
        return self._mapping._values(newest_first=True)


class SortedIds(Mapping[str, int]):
    """Attempt id -> its position among the snapshot's attempts, by binary search over the ids
    in sorted order beside their positions, both kept in the snapshot's header: a dict of
    every id cost each restore ~3 ms to build at 32k attempts, for the few dozen a command
    looks up."""

    def __init__(self, ordered: list[str], positions: array.array[int]) -> None:
        if len(ordered) != len(positions):
            raise ValueError("the snapshot's sorted attempt ids do not match their positions")
        self._ordered = ordered
        self._positions = positions

    def get(self, key: object, default: int | None = None) -> int | None:  # type: ignore[override]
        if type(key) is not str:
            return default
        ordered = self._ordered
        at = bisect_left(ordered, key)
        if at == len(ordered) or ordered[at] != key:
            return default
        position = self._positions[at]
        if not 0 <= position < len(ordered):
            raise ValueError("the snapshot's sorted attempt ids name no attempt")
        return position

    def __getitem__(self, key: str) -> int:
        position = self.get(key)
        if position is None:
            raise KeyError(key)
        return position

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._ordered)

    def __len__(self) -> int:
        return len(self._ordered)
