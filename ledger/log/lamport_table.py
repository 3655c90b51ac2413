"""The Lamport counter of every event id a walker has seen, kept compact when it is pickled.

A walker remembers every id it verified (a later line may name any of them as a parent, and
no id may appear twice). As a dict that is one 32-character string, one int and one table
slot per event: ~15 MB at 100k events, the largest part of a state snapshot after the
attempts. Pickled, the ids become one sorted run of 16-byte digests and the counters one
array (~2.4 MB at 100k events, no object per event); unpickled, they stay that way, looked up
by binary search, while the ids verified after the snapshot go into the dict itself.

Only a walker resumed from a snapshot holds a `LamportTable`: it verifies a tail of a few
hundred lines, so the Python-level lookups cost microseconds, not the replay's hot loop
(a full replay fills a plain dict).
"""

from __future__ import annotations

import array
from collections.abc import Iterable
from typing import Any

from ledger.log import codec, packed_digests

_DIGEST = codec.ID_HEX // 2  # bytes per id: the ids are lowercase hex


def _digest(event_id: object) -> bytes | None:
    """The bytes an id is stored as, or None when it cannot be one of the stored ids."""
    if type(event_id) is not str or len(event_id) != codec.ID_HEX:
        return None
    try:
        digest = bytes.fromhex(event_id)
    except ValueError:
        return None
    # fromhex also takes upper case: an id that is not its own lowercase form is not stored.
    return digest if digest.hex() == event_id else None


class LamportTable(dict[str, int]):
    """id -> Lamport counter: the ids added since unpickling in the dict, the earlier ones in
    a sorted digest run beside it (`frozen`, `counters`)."""

    frozen: bytes
    counters: array.array[int]

    def __init__(self, frozen: bytes = b"", counters: Iterable[int] = ()) -> None:
        super().__init__()
        self.frozen = frozen
        self.counters = array.array("q", counters)

    def _find(self, event_id: object) -> int:
        """The index of `event_id` in the frozen run, or -1."""
        digest = _digest(event_id)
        if digest is None:
            return -1
        return packed_digests.index_of(self.frozen, _DIGEST, len(self.counters), digest)

    def __missing__(self, event_id: str) -> int:
        index = self._find(event_id)
        if index < 0:
            raise KeyError(event_id)
        return self.counters[index]

    def __contains__(self, event_id: object) -> bool:
        return dict.__contains__(self, event_id) or self._find(event_id) >= 0

    def get(self, event_id: str, default: Any = None) -> Any:
        if dict.__contains__(self, event_id):
            return dict.__getitem__(self, event_id)
        index = self._find(event_id)
        return default if index < 0 else self.counters[index]

    def setdefault(self, event_id: str, default: int = 0) -> int:
        found = self.get(event_id)
        if found is not None:
            return int(found)
        self[event_id] = default
        return default

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.counters)

    def __reduce__(self) -> tuple[Any, tuple[bytes, bytes]]:
        table = compacted(self)
        return _restored, (table.frozen, table.counters.tobytes())


def compacted(lamports: dict[str, int]) -> LamportTable:
    """`lamports` (a dict, or a LamportTable with ids added since) as one sorted digest run
    and one array of counters in the same order, with nothing in the dict part."""
    if isinstance(lamports, LamportTable):
        frozen, counters = lamports.frozen, lamports.counters
    else:
        frozen, counters = b"", array.array("q")
    added = sorted((bytes.fromhex(k), v) for k, v in dict.items(lamports))
    if not added and isinstance(lamports, LamportTable):
        return lamports
    if not counters:  # a full replay's dict: nothing to merge with
        table = LamportTable(b"".join(digest for digest, _ in added))
        table.counters = array.array("q", [counter for _, counter in added])
        return table
    # Merge the added ids (a few after a snapshot, all of them after a full replay) into the
    # frozen run at their places, slice by slice.
    runs: list[bytes] = []
    merged = array.array("q")
    done = 0
    for digest, counter in added:
        at = _insertion_point(frozen, len(counters), digest, done)
        runs.append(frozen[done * _DIGEST : at * _DIGEST])
        merged.extend(counters[done:at])
        runs.append(digest)
        merged.append(counter)
        done = at
    runs.append(frozen[done * _DIGEST :])
    merged.extend(counters[done:])
    table = LamportTable(b"".join(runs))
    table.counters = merged
    return table


def _insertion_point(frozen: bytes, count: int, digest: bytes, low: int) -> int:
    """Where `digest` goes in the sorted run (at or after `low`)."""
    high = count
    while low < high:
        middle = (low + high) // 2
        if frozen[middle * _DIGEST : (middle + 1) * _DIGEST] < digest:
            low = middle + 1
        else:
            high = middle
    return low


def _restored(frozen: bytes, counters: bytes) -> LamportTable:
    table = LamportTable(frozen)
    table.counters.frombytes(counters)
    return table
