"""Where a verified ledger ends: one value, `Position`, owned by the log (DESIGN §4).

A Position is read with the events (`chain.stream`) and moves with each append
(`after_append`): how many events there are and the id of the last, the head to append after,
the Lamport counter, the byte size and any torn tail. Read from a store, it also records what
the bytes behind it looked like (the holder's identity, the last bytes, the quarantine file
the next repair would create), so that an append after it checks the ledger's end instead of
reading and verifying the whole file again, and a reader folds only what was appended since
(`appended_since`). MEMORY.md's header records a Position's `events` and `last`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
from attrs import frozen

from ledger.log.record import Event
from ledger.log.walker import Walker

# How much of the ledger's end an append compares with what the command read: an append
# never rewrites earlier bytes, so another writer's batch shows in the size, and anything
# else that rewrote the file (a checkout, a hand edit, a rewrite) shows in its identity or
# its end.
TAIL = 4096

# A backend's (identity, size, last bytes) of the ledger now, given how many last bytes.
StampNow = Callable[[int], tuple[object, int, bytes]]
# A backend's (identity, bytes from an offset to the end) of the ledger now.
ReadFrom = Callable[[int], tuple[object, bytes]]


@frozen
class Torn:
    """A torn tail: the bytes from `offset` (line `line`, 1-based) to the end of the file."""

    line: int
    offset: int
    byte_count: int
    reason: str

    @property
    def newline_only(self) -> bool:
        """True when nothing is torn but the last line's newline: that line verified
        completely (id, parents, Lamport, its batch), so it counts and only `\n` is missing."""
        return self.byte_count == 0


@frozen
class Position:
    """Where a verified ledger ends, without its events."""

    events: int = 0
    last: str = ""  # the id of the last event in file order ("" for an empty ledger)
    name: str = ""
    head: tuple[str, ...] = ()  # the events no event names as a parent, sorted
    lamport: int = 0
    size: int = 0
    torn: Torn | None = None
    # Quarantine files that ledger.repaired events record (an append checks the others).
    repaired: frozenset[str] = frozenset()
    # What the bytes behind it looked like when a store read them (`tail` None: not known):
    # the holder's identity, the last bytes, and the next repair's quarantine file.
    identity: object = None
    tail: bytes | None = attrs.field(default=None, repr=False)
    next_quarantine: str = ""
    # The walker that verified these bytes, kept to verify only what is appended after them
    # (`chain.resume`); None when it cannot be resumed from (a torn tail, a keeping scan).
    cursor: Walker | None = attrs.field(default=None, eq=False, repr=False)


def stamped(position: Position, identity: object, data: bytes, next_quarantine: str) -> Position:
    """`position` with what `data`, read from the holder `identity`, looked like."""
    return attrs.evolve(
        position, identity=identity, tail=data[-TAIL:], next_quarantine=next_quarantine
    )


def unchanged_since(
    position: Position, stamp_now: StampNow, quarantine_exists: Callable[[str], bool]
) -> bool:
    """True when the ledger holds exactly the bytes `position` was read from (checked by
    holder identity, size and last 4 KiB) and no quarantine file appeared since."""
    if position.tail is None:
        return False
    return stamp_now(len(position.tail)) == (
        position.identity,
        position.size,
        position.tail,
    ) and not quarantine_exists(position.next_quarantine)


def after_append(position: Position, events: Sequence[Event], written: bytes) -> Position:
    """The position after `events` (whose lines are `written`) were appended at `position`."""
    assert position.tail is not None  # an append is only made at a position read from a store
    size = position.size + len(written)
    cursor = position.cursor
    if cursor is not None and cursor.verified == position.size:
        cursor.take_written(events, size)
    else:
        cursor = None
    return attrs.evolve(
        position,
        events=position.events + len(events),
        last=events[-1].id,
        head=(events[-1].id,),
        lamport=events[-1].lamport,
        size=size,
        torn=None,
        tail=(position.tail + written)[-TAIL:],
        cursor=cursor,
    )


def appended_since(
    position: Position, read_from: ReadFrom, quarantine_exists: Callable[[str], bool]
) -> tuple[object, bytes] | None:
    """The bytes from `position`'s last bytes on and the holder's identity, when the ledger
    still holds the bytes `position` was read from as its prefix (same holder, its last 4 KiB
    unchanged, no quarantine file since); None when the prefix was rewritten, replaced or
    repaired."""
    tail = position.tail
    if tail is None or quarantine_exists(position.next_quarantine):
        return None
    identity, data = read_from(position.size - len(tail))
    if identity != position.identity or not data.startswith(tail):
        return None
    return identity, data
