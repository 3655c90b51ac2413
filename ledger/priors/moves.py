"""How one config moves away from another, position by position: the directions priors learn.

A config key is read as numbered positions: each axis of a tile, each entry of a nested list
(a cube tile's L0 and L1 of M, K and N), each value of a map of numbers, the number of a scalar
knob, and the largest factor of an unroll list (kind `int-list`, whose lists differ in length).
A move is one position getting larger or smaller; a value that is not a number, or whose shape
differs, moves as a whole to its new value ("changed"). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from attrs import frozen

from ledger.domain.knobs import is_number
from ledger.log import codec

Direction = Literal["larger", "smaller", "changed"]


@frozen
class Move:
    """One position of one key moved one way, and the value it moved to."""

    key: str
    where: str  # "axis 1", "[1][0]", "[\"-1\"]", "largest" or "" (the key's one number)
    direction: Direction
    value: float | str  # the number moved to; for "changed", the new value's canonical JSON

    @property
    def way(self) -> tuple[str, str, str]:
        """What two moves share when they go the same way (a change: to the same value)."""
        way = str(self.value) if self.direction == "changed" else self.direction
        return (self.key, self.where, way)

    def reaches(self, other: Move) -> bool:
        """True when this move goes the same way as `other` and at least as far."""
        if self.way != other.way:
            return False
        if isinstance(self.value, str) or isinstance(other.value, str):
            return self.value == other.value
        if self.direction == "larger":
            return self.value >= other.value
        return self.value <= other.value

    def text(self) -> str:
        """The move in words: "vec_tile_shape axis 1 larger"."""
        where = f" {self.where}" if self.where else ""
        if self.direction == "changed":
            return f"{self.key}{where} set to {self.value}"
        return f"{self.key}{where} {self.direction}"


def positions(value: Any, kind: str | None) -> dict[str, float] | None:
    """The numbered positions of a key's value, or None when it is not made of numbers."""
    if kind == "int-list":
        if isinstance(value, list) and value and all(is_number(v) for v in value):
            return {"largest": float(max(value))}
        return None
    if is_number(value):
        return {"": float(value)}
    if isinstance(value, list) and value and all(is_number(v) for v in value):
        return {f"axis {i}": float(v) for i, v in enumerate(value)}
    found: dict[str, float] = {}
    return found if _nested(value, "", found) and found else None


def _nested(value: Any, path: str, found: dict[str, float]) -> bool:
    """Collect the numbers of nested lists and maps by their index path; False on anything
    else (a string, a boolean, null, an empty container)."""
    if is_number(value):
        found[path] = float(value)
        return True
    if isinstance(value, list) and value:
        return all(_nested(v, f"{path}[{i}]", found) for i, v in enumerate(value))
    if isinstance(value, dict) and value:
        return all(
            _nested(value[k], f"{path}[{codec.canonical_json(str(k))}]", found)
            for k in sorted(value, key=str)
        )
    return False


@frozen
class Reading:
    """A key's value read once: its canonical JSON and its numbered positions."""

    text: str
    positions: dict[str, float] | None


def read(value: Any, kind: str | None) -> Reading:
    """The value of a key of `kind`, read for comparing."""
    return Reading(codec.canonical_json(value), positions(value, kind))


def reading_moves(key: str, before: Reading, after: Reading) -> tuple[Move, ...]:
    """How `key` moved from `before` to `after`: one move per position that changed, or one
    "changed" move when the values cannot be compared position by position."""
    if before.text == after.text:
        return ()
    old, new = before.positions, after.positions
    whole = (Move(key, "", "changed", after.text),)
    if old is None or new is None or old.keys() != new.keys():
        return whole
    moved = tuple(
        Move(key, where, "larger" if new[where] > old[where] else "smaller", new[where])
        for where in old
        if new[where] != old[where]
    )
    # Unroll lists with one largest factor differ elsewhere: a change all the same.
    return moved or whole


def key_moves(key: str, before: Any, after: Any, kind: str | None) -> tuple[Move, ...]:
    """How `key` moved from `before` to `after` (see `reading_moves`)."""
    return reading_moves(key, read(before, kind), read(after, kind))


def readings(
    config: Mapping[str, Any], keys: Iterable[str], kinds: Mapping[str, str]
) -> dict[str, Reading]:
    """The values of `keys` in `config`, read (a key it lacks is None), in key order."""
    return {key: read(config.get(key), kinds.get(key)) for key in sorted(set(keys))}


def moves_between(before: Mapping[str, Reading], after: Mapping[str, Reading]) -> tuple[Move, ...]:
    """Every move from one config's readings to another's (of the same keys)."""
    return tuple(move for key in before for move in reading_moves(key, before[key], after[key]))


def config_moves(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    keys: Iterable[str],
    kinds: Mapping[str, str],
) -> tuple[Move, ...]:
    """Every move of `keys` from one config to another (a key one of them lacks is None)."""
    return moves_between(readings(before, keys, kinds), readings(after, keys, kinds))
