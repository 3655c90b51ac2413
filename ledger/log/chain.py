"""Scanning a ledger's bytes: the verified events, the head, and a torn tail, or LedgerDamaged.

`scan` is the path every read takes (it raises at the first damaged line); `stream` is
replay's, handing each complete batch to a sink and keeping nothing. Audit's thorough check,
which reports every finding instead, is `integrity.check`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import evolve, frozen

from ledger.errors import LedgerDamaged
from ledger.log.position import Position, Torn
from ledger.log.record import Event
from ledger.log.walker import (
    BadLine,
    Walker,
    prefix_size,
    split_lines,
    torn_start,
    unfinished_batch,
)

_DAMAGE_HINT = (
    "the ledger was edited or damaged in the middle; it is never repaired silently: restore "
    "the file from git (`git diff` shows what changed) and run `tune-ledger audit`; lines "
    "repeated or out of order after a git merge without the tune-ledger driver are put back "
    "in order by `tune-ledger normalize OP`"
)


@frozen
class Log:
    """The verified events of a ledger in file order, and where its valid bytes end."""

    name: str
    events: tuple[Event, ...]
    # The raw line of each event (no newline): merge and normalize rewrite bytes, never
    # re-encode, so that a content id never changes under them.
    lines: tuple[bytes, ...]
    # The events no event names as a parent, sorted; the next batch's first event names them.
    head: tuple[str, ...]
    lamport: int
    size: int
    torn: Torn | None

    def repaired(self) -> frozenset[str]:
        """The quarantine files that this log's ledger.repaired events record."""
        return frozenset(
            str(e.data.get("quarantine")) for e in self.events if e.type == "ledger.repaired"
        )

    def position(self) -> Position:
        """Where this log ends, without its events."""
        return Position(
            last=self.events[-1].id if self.events else "",
            name=self.name,
            head=self.head,
            lamport=self.lamport,
            size=self.size,
            torn=self.torn,
            events=len(self.events),
            repaired=self.repaired(),
        )


def scan(data: bytes, name: str) -> Log:
    """Verify a ledger's bytes and return its events; raise LedgerDamaged at the first bad line.

    A torn tail (an unterminated last line, or a last batch missing its final parts) is left
    out of the events and reported in `Log.torn`.
    """
    lines, rest = split_lines(data)
    walker = Walker()
    try:
        walker.feed(lines)
        keep, reason = torn_start(walker, len(lines), rest)
        if keep is None:
            raise _unfinished_batch(walker, lines, name)
    except BadLine as bad:
        raise _damaged(name, bad.index + 1, bad.event_id, bad.message) from None
    log = _log(name, data, lines, walker, keep, reason)
    if log.torn is None:
        return log
    return (_completed_by_newline(data, name) if rest else None) or log


def stream(data: bytes, name: str, sink: Callable[[Event], object]) -> Position:
    """Verify a ledger's bytes like `scan`, handing each event of a complete batch to `sink`
    in file order instead of keeping them; raise LedgerDamaged at the first bad line."""
    lines, rest = split_lines(data)
    walker = Walker(sink)
    try:
        walker.feed(lines)
    except BadLine as bad:
        raise _damaged(name, bad.index + 1, bad.event_id, bad.message) from None
    if walker.open or rest:
        # Rare: a torn tail, or a batch left unfinished (damage). The sink has seen only
        # complete batches; the keeping scan names the tail or the damage exactly.
        log = scan(data, name)
        if log.torn is not None and log.torn.newline_only:
            # The unterminated last line verified and closed its batch: hand the sink the
            # events of that batch, which the walker had held back as unfinished.
            seen = min((b.first for b in walker.open.values()), default=len(lines))
            for event in log.events[seen:]:
                sink(event)
        return log.position()
    walker.verified = len(data)
    return Position(
        events=len(lines),
        last=walker.last,
        name=name,
        head=tuple(sorted(walker.heads)),
        lamport=walker.max_lamport,
        size=len(data),
        repaired=frozenset(walker.repaired),
        cursor=walker,
    )


def resume(position: Position, appended: bytes, sink: Callable[[Event], object]) -> Position | None:
    """Verify `appended`, the bytes written after `position`'s clean end, with the walker that
    verified the bytes before, handing each event to `sink`; the position after them, or None
    when
    they are not complete, valid batches (a torn tail, damage): the caller must then read the
    whole ledger again, which names the tail or the damage exactly, and drop what `sink` got."""
    walker = position.cursor
    if walker is None or walker.verified != position.size:
        return None  # another position's resume or append moved this walker on
    walker.verified = -1  # spent until it verifies the new bytes cleanly
    lines, rest = split_lines(appended)
    if rest:
        return None
    walker.sink = sink
    try:
        walker.feed(lines)
    except BadLine:
        return None
    if walker.open or walker.pending:
        return None
    walker.verified = position.size + len(appended)
    return evolve(
        position,
        events=position.events + len(lines),
        last=walker.last or position.last,
        head=tuple(sorted(walker.heads)),
        lamport=walker.max_lamport,
        size=walker.verified,
        torn=None,
        repaired=position.repaired | walker.repaired,
        cursor=walker,
    )


def _unfinished_batch(walker: Walker, lines: list[bytes], name: str) -> LedgerDamaged:
    line, event_id, message = unfinished_batch(walker, lines)
    return _damaged(name, line, event_id, message)


def _log(name: str, data: bytes, lines: list[bytes], walker: Walker, keep: int, reason: str) -> Log:
    events = walker.events
    if keep == len(events):
        head, lamport = walker.heads, walker.max_lamport
    else:  # rare: a torn batch is left out, so its parts must not count as heads
        events = events[:keep]
        head, lamport = _head_of(events), max((e.lamport for e in events), default=0)
    size = prefix_size(data, lines, keep)
    torn = (
        None
        if size == len(data)
        else Torn(line=keep + 1, offset=size, byte_count=len(data) - size, reason=reason)
    )
    return Log(
        name=name,
        events=tuple(events),
        lines=tuple(lines[:keep]),
        head=tuple(sorted(head)),
        lamport=lamport,
        size=size,
        torn=torn,
    )


NEWLINE_MISSING = (
    "the last line verifies completely but has no newline (an editor or a tool stripped "
    "it); the next state-changing command writes the newline back"
)


def _completed_by_newline(data: bytes, name: str) -> Log | None:
    """The log of `data` whose unterminated last line verifies completely with its newline
    written back (its batch complete), or None when it does not: then it is a torn tail."""
    try:
        completed = scan(data + b"\n", name)
    except LedgerDamaged:
        return None
    if completed.torn is not None:
        return None
    torn = Torn(line=len(completed.events), offset=len(data), byte_count=0, reason=NEWLINE_MISSING)
    return evolve(completed, size=len(data), torn=torn)


def _head_of(events: Sequence[Event]) -> set[str]:
    named = {parent for event in events for parent in event.parents}
    return {event.id for event in events} - named


def _damaged(name: str, line: int, event_id: str | None, message: str) -> LedgerDamaged:
    event = f"event {event_id}: " if event_id else ""
    return LedgerDamaged(
        f"{name}:{line}: {event}{message}",
        hint=_DAMAGE_HINT,
        details={"path": name, "line": line, "event": event_id},
    )
