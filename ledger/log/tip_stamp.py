"""The append fast path: what a tip remembers of the bytes it was read from, so an append
after it checks the ledger's end instead of reading and verifying the whole file again."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import frozen

from ledger.log.chain import Tip
from ledger.log.record import Event

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
class Stamp:
    """What the bytes behind a tip looked like: holder identity, size, last bytes, and the
    quarantine file the next torn-tail repair would create."""

    identity: object
    size: int
    tail: bytes
    next_quarantine: str


def stamp_of(identity: object, data: bytes, next_quarantine: str) -> Stamp:
    """The stamp of `data`, read from the holder `identity`."""
    return Stamp(
        identity=identity, size=len(data), tail=data[-TAIL:], next_quarantine=next_quarantine
    )


def unchanged_since(
    tip: Tip, stamp_now: StampNow, quarantine_exists: Callable[[str], bool]
) -> bool:
    """True when the ledger holds exactly the bytes `tip` was read from (checked by holder
    identity, size and last 4 KiB) and no quarantine file appeared since."""
    stamp = tip.stamp
    if not isinstance(stamp, Stamp):
        return False
    return stamp_now(len(stamp.tail)) == (
        stamp.identity,
        stamp.size,
        stamp.tail,
    ) and not quarantine_exists(stamp.next_quarantine)


def tip_after(tip: Tip, events: Sequence[Event], written: bytes) -> Tip:
    """The tip after `events` (whose lines are `written`) were appended at `tip`."""
    stamp = tip.stamp
    assert isinstance(stamp, Stamp)  # the fast path is only taken with a stamped tip
    size = stamp.size + len(written)
    cursor = tip.cursor
    if cursor is not None and cursor.position == stamp.size:
        cursor.take_written(events, size)
    else:
        cursor = None
    # Built directly: attrs.evolve inspects the class on every call, which an append notices.
    return Tip(
        name=tip.name,
        head=(events[-1].id,),
        lamport=events[-1].lamport,
        size=size,
        torn=None,
        events=tip.events + len(events),
        repaired=tip.repaired,
        stamp=Stamp(
            identity=stamp.identity,
            size=size,
            # the last TAIL bytes of tail + written, without copying the whole of both
            tail=written[-TAIL:]
            if len(written) >= TAIL
            else stamp.tail[len(written) - TAIL :] + written,
            next_quarantine=stamp.next_quarantine,
        ),
        cursor=cursor,
    )


def appended_since(
    tip: Tip, read_from: ReadFrom, quarantine_exists: Callable[[str], bool]
) -> tuple[object, bytes] | None:
    """The bytes appended after `tip` and the holder's identity, when the ledger still holds
    the bytes `tip` was read from as its prefix (same holder, its last 4 KiB unchanged, no
    quarantine file since); None when the prefix was rewritten, replaced or repaired."""
    stamp = tip.stamp
    if not isinstance(stamp, Stamp) or quarantine_exists(stamp.next_quarantine):
        return None
    start = stamp.size - len(stamp.tail)
    identity, data = read_from(start)
    if identity != stamp.identity or not data.startswith(stamp.tail):
        return None
    return identity, data


def stamp_after(stamp: Stamp, identity: object, data: bytes) -> Stamp:
    """The stamp of a ledger that now ends with `data` (read from `stamp`'s tail on)."""
    start = stamp.size - len(stamp.tail)
    return Stamp(
        identity=identity,
        size=start + len(data),
        tail=data[-TAIL:],
        next_quarantine=stamp.next_quarantine,
    )
