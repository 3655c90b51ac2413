"""`State.measured_configs` restored from the snapshot: R9's keys looked up without loading them.

R9 keys every measured config by its canonical JSON text: ~32k texts at 100k events, 5.7 MB
of the snapshot's header, unpickled by every command that starts from it (ledger/shell/
state_snapshot.py) while a command looks up one or two (stages/retry.py, ledger/priors/
candidates.py: is this config measured, and by which attempt?). Restored, the map holds:

- each snapshot key's 16-byte digest, in one sorted run, beside the key's place in the
  map's order (`order`), looked up by binary search as ledger/log/lamport_table.py does
  for the walker's ids: `get` and `in` load no text;
- each key's value (an attempt id, or "baseline") as a number naming one of the snapshot's
  strings (`codes`, `names`): the attempts' own id strings;
- the texts themselves in parts, in the map's order (`KeyTexts`), loaded when a key is
  iterated over or an attempt whose config is its key is read.

It means what a dict means for every operation the code uses (tests/test_lazy_measured.py
compares them): a key set after the restore that is not a snapshot key goes at the end, a
snapshot key keeps its place and takes the new value; `clear` drops everything without
loading; deleting a key first gathers every item into one dict (no command deletes one). It
pickles as the plain dict it stands for. A full replay builds a plain dict: its hot loop
never pays for this.

Two different texts with one 16-byte digest would read as one key: the snapshot writer
refuses to write a table with two equal digests, and a text looked up after the restore
collides with a snapshot key with odds of 2^-128.
"""

from __future__ import annotations

import array
import hashlib
from collections.abc import (
    Callable,
    ItemsView,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
    ValuesView,
)
from typing import Any

from ledger.log import packed_digests

DIGEST_BYTES = 16

# Loads part `n` of the snapshot's key texts: those at positions n * per_part up to the next.
LoadTexts = Callable[[int], list[str]]


def key_digest(text: str) -> bytes:
    """The bytes a key text is looked up by."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_BYTES).digest()


class KeyTexts:
    """The snapshot's key texts in the map's order, each part loaded when first read."""

    def __init__(self, count: int, per_part: int, load_part: LoadTexts) -> None:
        self.count = count
        self._per_part = per_part
        self._parts: dict[int, list[str]] = {}
        self._load_part = load_part

    def __getitem__(self, position: int) -> str:
        if not 0 <= position < self.count:
            raise IndexError(position)
        n, offset = divmod(position, self._per_part)
        part = self._parts.get(n)
        if part is None:
            part = self._load_part(n)
            expected = min(self._per_part, self.count - n * self._per_part)
            if type(part) is not list or len(part) != expected:
                raise ValueError(f"part {n} of the snapshot's R9 keys is not the one listed")
            if not all(type(text) is str for text in part):
                raise ValueError(f"part {n} of the snapshot's R9 keys holds a non-text")
            self._parts[n] = part
        return part[offset]

    def loaded_parts(self) -> int:
        """How many parts were loaded so far."""
        return len(self._parts)


class LazyMeasured(MutableMapping[str, str]):
    """R9 key text -> the attempt that measured it, in the order measured (see the module
    docstring): the snapshot's keys found by digest, their texts loaded when iterated."""

    def __init__(
        self,
        texts: KeyTexts,
        digests: bytes,
        order: array.array[int],
        codes: array.array[int],
        names: Sequence[str],
    ) -> None:
        if not len(digests) == DIGEST_BYTES * texts.count == DIGEST_BYTES * len(order):
            raise ValueError("the snapshot's R9 digest table does not match its keys")
        if len(codes) != texts.count:
            raise ValueError("the snapshot's R9 values do not match its keys")
        # Each place and code is checked when used: min() and max() over 32k of them would
        # cost every restore ~3.6 ms.
        self._texts = texts
        self._digests = digests
        self._order = order  # the sorted digests' places in the map's order
        self._codes = codes  # each snapshot key's value, by place: an index into `names`
        self._names = names
        self._count = texts.count  # 0 once cleared or gathered
        self._changed: dict[int, str] = {}  # snapshot keys set since, by place
        self._added: dict[str, str] = {}  # keys set since that are not snapshot keys

    # --- one key ------------------------------------------------------------------------

    def _find(self, key: object) -> int:
        """The place of `key` among the snapshot's keys, or -1."""
        if type(key) is not str or not self._count:
            return -1
        index = packed_digests.index_of(self._digests, DIGEST_BYTES, self._count, key_digest(key))
        if index < 0:
            return -1
        place = self._order[index]
        if not 0 <= place < self._count:
            raise ValueError("the snapshot's R9 digest table names no key")
        return place

    def _value_at(self, place: int) -> str:
        changed = self._changed.get(place)
        if changed is not None:
            return changed
        code = self._codes[place]
        if not 0 <= code < len(self._names):
            raise ValueError("the snapshot's R9 values name no attempt")
        return self._names[code]

    def __getitem__(self, key: str) -> str:
        added = self._added.get(key)
        if added is not None:
            return added
        place = self._find(key)
        if place < 0:
            raise KeyError(key)
        return self._value_at(place)

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        added = self._added.get(key)
        if added is not None:
            return added
        place = self._find(key)
        return default if place < 0 else self._value_at(place)

    def __contains__(self, key: object) -> bool:
        return key in self._added or self._find(key) >= 0

    def __len__(self) -> int:
        return self._count + len(self._added)

    # --- all of them, in order --------------------------------------------------------------

    def __iter__(self) -> Iterator[str]:
        size = len(self)
        for place in range(self._count):
            yield self._texts[place]
            _unchanged(self, size)
        yield from self._added  # a dict raises itself when it grows meanwhile

    def _items(self) -> Iterator[tuple[str, str]]:
        size = len(self)
        for place in range(self._count):
            yield self._texts[place], self._value_at(place)
            _unchanged(self, size)
        yield from self._added.items()

    def _values(self) -> Iterator[str]:
        size = len(self)
        for place in range(self._count):  # no text loaded
            yield self._value_at(place)
            _unchanged(self, size)
        yield from self._added.values()

    def items(self) -> _Items:
        return _Items(self)

    def values(self) -> _Values:
        return _Values(self)

    # --- changing ---------------------------------------------------------------------------

    def __setitem__(self, key: str, value: str) -> None:
        if key not in self._added:
            place = self._find(key)
            if place >= 0:
                self._changed[place] = value
                return
        self._added[key] = value

    def __delitem__(self, key: str) -> None:
        self._gather()
        del self._added[key]

    def clear(self) -> None:
        self._drop_snapshot_keys()
        self._added = {}

    def _gather(self) -> None:
        """Hold every item in `_added`, in order, as a plain dict would."""
        if self._count:
            gathered = dict(self._items())
            self._drop_snapshot_keys()
            self._added = gathered

    def _drop_snapshot_keys(self) -> None:
        self._count = 0
        self._digests = b""
        self._order = array.array("i")
        self._codes = array.array("i")
        self._changed = {}

    # --- what a dict also is ------------------------------------------------------------------

    def __reduce__(self) -> tuple[type, tuple[list[tuple[str, str]]]]:
        return dict, (list(self._items()),)

    def __repr__(self) -> str:
        return repr(dict(self._items()))

    def loaded_parts(self) -> int:
        """How many parts of the snapshot's key texts were loaded so far."""
        return self._texts.loaded_parts()


def _unchanged(measured: LazyMeasured, size: int) -> None:
    if len(measured) != size:
        raise RuntimeError("dictionary changed size during iteration")


class _Items(ItemsView[str, str]):
    _mapping: LazyMeasured

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return self._mapping._items()


class _Values(ValuesView[str]):
    _mapping: LazyMeasured

    def __iter__(self) -> Iterator[str]:
        return self._mapping._values()


# --- kept in the snapshot -------------------------------------------------------------------


# What the header keeps: the key count, the sorted digests, their places, each key's value's
# code (native int32 arrays as bytes: the snapshot is read by the machine that wrote it, as
# its key is), the values that are not attempt ids.
Table = dict[str, Any]


def frozen_table(measured: Mapping[str, str], ids: Sequence[str]) -> tuple[list[str], Table] | None:
    """The texts of `measured`'s keys in order, and what the snapshot's header keeps to look
    them up (`restored`); each value as an index into `ids` (the attempts' ids), or past
    them into the table's own `extras` ("baseline"). None when two keys share a digest or a
    key or value is not text: the snapshot is not written."""
    texts = list(measured)
    index = {name: n for n, name in enumerate(ids)}
    extras: dict[str, int] = {}
    codes = array.array("i")
    for text, value in zip(texts, measured.values(), strict=True):
        if type(text) is not str or type(value) is not str:
            return None
        code = index.get(value)
        if code is None:
            code = extras.setdefault(value, len(ids) + len(extras))
        codes.append(code)
    pairs = sorted((key_digest(text), place) for place, text in enumerate(texts))
    digests = b"".join(digest for digest, _ in pairs)
    if len({digest for digest, _ in pairs}) != len(pairs):
        return None
    table: Table = {
        "count": len(texts),
        "digests": digests,
        "order": array.array("i", [place for _, place in pairs]).tobytes(),
        "codes": codes.tobytes(),
        "extras": list(extras),
    }
    return texts, table


def restored(table: Table, ids: list[str], texts: KeyTexts) -> LazyMeasured:
    """The map a snapshot's `table` (of `frozen_table`) stands for, its texts from `texts`."""
    order, codes = array.array("i"), array.array("i")
    order.frombytes(table["order"])
    codes.frombytes(table["codes"])
    extras = table["extras"]
    if not isinstance(extras, list) or not all(type(name) is str for name in extras):
        raise ValueError("the snapshot's R9 values are not texts")
    if table["count"] != texts.count or type(table["digests"]) is not bytes:
        raise ValueError("the snapshot's R9 table does not match its keys")
    return LazyMeasured(texts, table["digests"], order, codes, ids + extras)
