"""The rules every event store follows, over the byte primitives of a backend (DESIGN §4).

A read verifies the whole chain; an append is atomic (one command's lines in one write) and
durable, names the log's heads, and first repairs a torn tail (kept in quarantine, recorded by
a `ledger.repaired` event); damage in the middle of the file is refused, never rewritten.
`MemoryStore` and `FileStore` implement the primitives and differ only in where bytes live.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from attrs import frozen

from ledger.errors import Conflict
from ledger.log import chain, integrity, record
from ledger.log.chain import Log
from ledger.log.integrity import Finding
from ledger.log.position import (
    Position,
    after_append,
    appended_since,
    stamped,
    unchanged_since,
)
from ledger.log.quarantine import (
    Quarantined,
    Repairs,
    cut_torn_tail,
    next_quarantine_name,
    plan_repairs,
    quarantine_findings,
    quarantined,
)
from ledger.log.record import Draft, Event


@frozen
class AppendResult:
    """What an append wrote: the command's sealed events, the repair events written before
    them (a torn tail quarantined now, or a quarantine an interrupted repair left unrecorded),
    and the head after them."""

    events: tuple[Event, ...]
    repairs: tuple[Event, ...]
    head: tuple[str, ...]
    # Where the ledger ends now, for a next append by the same writer (None: read it again).
    position: Position | None = None


class Session(Protocol):
    """The primitive operations of one append or rewrite, all done holding the store's lock."""

    def data(self) -> bytes: ...

    def stamp(self, tail: int) -> tuple[object, int, bytes]: ...

    def quarantine(self, name: str, torn: bytes) -> None: ...

    def truncate(self, size: int) -> None: ...

    def write(self, lines: bytes) -> None: ...

    def replace(self, data: bytes) -> None: ...


class Store(ABC):
    """The rules of reading and appending, over the byte primitives of a backend."""

    name: str

    def __init__(self, name: str) -> None:
        self.name = name

    def read(self) -> Log:
        """The verified log; raises LedgerDamaged naming path:line if the middle is damaged."""
        return self._scan(self.read_bytes())

    def read_bytes(self) -> bytes:
        """The ledger's bytes as one consistent snapshot (no write half seen), unverified."""
        return self._read_from(0)[1]

    def _scan(self, data: bytes) -> Log:
        return chain.scan(data, self.name)

    def stream(self, sink: Callable[[Event], object]) -> Position:
        """Verify the log and hand its events to `sink` in file order, keeping none of them
        (replay's path); the position it returns lets `append` skip re-reading the file."""
        identity, data = self._read_from(0)
        position = chain.stream(data, self.name, sink)
        names = self.quarantine_names()
        if position.torn is not None or any(name not in position.repaired for name in names):
            return position  # the next append has a repair to make: it takes the full path
        return stamped(position, identity, data, next_quarantine_name(self.name, names))

    def stream_after(self, position: Position, sink: Callable[[Event], object]) -> Position | None:
        """Verify only the bytes appended since `position` (from `stream`), handing their events
        to `sink`; None when that cannot be done (the prefix was rewritten, replaced or repaired,
        or the new bytes hold a torn tail or damage): then `sink` may have seen some events, its
        state must be dropped, and `stream` reads the whole ledger (and names any damage)."""
        found = appended_since(position, self._read_from, self.quarantine_exists)
        if found is None or position.tail is None:
            return None
        identity, data = found
        resumed = chain.resume(position, data[len(position.tail) :], sink)
        if resumed is None:
            return None
        return stamped(resumed, identity, data, position.next_quarantine)

    def append(
        self,
        drafts: Sequence[Draft],
        *,
        expected_head: tuple[str, ...] | None,
        position: Position | None = None,
    ) -> AppendResult:
        """Append one command's events atomically and durably, repairing a torn tail first.

        Raises Conflict when `expected_head` is given and another writer moved the head.
        `position`, from `stream`, spares re-reading and re-verifying the file when its size,
        identity and last bytes show that nothing was written since.
        """
        with self._session() as session:
            log: Log | Position
            # Nothing written since `position` was read: no head moved, no tail to repair.
            if position is not None and unchanged_since(
                position, session.stamp, self.quarantine_exists
            ):
                data, log = b"", position
            else:
                position, data = None, session.data()
                log = self._scan(data)
            _check_head(log, expected_head)
            if not drafts:
                return AppendResult(events=(), repairs=(), head=log.head, position=position)
            planned: Repairs = ([], None)
            if isinstance(log, Log):
                planned = plan_repairs(
                    self.name, self.quarantine_names(), self.quarantine_bytes, data, log
                )
            repairs, torn = planned
            # Seal everything before changing anything: a draft that cannot be encoded
            # must leave the ledger and its quarantine files as they were.
            events, lines = _seal_batches(
                [*([Draft(r, drafts[0].provenance)] for r in repairs), drafts], log
            )
            lead = cut_torn_tail(session, torn, log.size) if torn is not None else b""
            written = lead + b"".join(lines)
            session.write(written)
        return AppendResult(
            events=tuple(events[len(repairs) :]),
            repairs=tuple(events[: len(repairs)]),
            head=(events[-1].id,),
            position=None if position is None else after_append(position, events, written),
        )

    def rewrite(self, data: bytes, *, expected: bytes) -> None:
        """Replace the ledger's bytes by `data` atomically and durably if it still holds
        exactly `expected`, the bytes the caller read (else Conflict, nothing written).

        Raises LedgerDamaged (nothing written) when `data` does not verify as a ledger; a
        torn tail at its end is kept for the next append to quarantine. A position read
        before the rewrite no longer matches (the holder changes), so an append after it
        re-reads.
        """
        self._scan(data)
        with self._session() as session:
            if session.data() != expected:
                raise Conflict(
                    f"{self.name}: the ledger changed since it was read; nothing was rewritten",
                    hint="read the ledger again and redo the change",
                    details={"path": self.name},
                )
            if data != expected:
                session.replace(data)

    def unchanged_since(self, position: Position) -> bool:
        """True when the ledger still holds exactly the bytes `position` was read from."""
        found = appended_since(position, self._read_from, self.quarantine_exists)
        return found is not None and found[1] == position.tail

    def findings(self) -> list[Finding]:
        """Every integrity finding: the chain's, then quarantine files unaccounted for."""
        checked = integrity.check(self.read_bytes())
        return [*checked.findings, *quarantine_findings(self.quarantines(), checked)]

    def quarantines(self) -> list[Quarantined]:
        """The quarantine files that torn-tail repairs left beside the ledger."""
        return [quarantined(name, self.quarantine_bytes(name)) for name in self.quarantine_names()]

    @abstractmethod
    def quarantine_names(self) -> list[str]:
        """The names of the quarantine files beside the ledger, oldest first."""

    @abstractmethod
    def quarantine_bytes(self, name: str) -> bytes:
        """The bytes kept in one quarantine file."""

    @abstractmethod
    def quarantine_exists(self, name: str) -> bool:
        """True when a quarantine file of that name is beside the ledger."""

    @abstractmethod
    def _read_from(self, offset: int) -> tuple[object, bytes]:
        """The identity of what holds the ledger (a file replaced by a checkout is another file,
        even with the same bytes) and its bytes from `offset` to the end, as one consistent
        snapshot."""

    @abstractmethod
    def _session(self) -> AbstractContextManager[Session]:
        """Hold the store's exclusive lock and give the primitives of one append or rewrite."""


def _check_head(log: Log | Position, expected_head: tuple[str, ...] | None) -> None:
    if expected_head is None or tuple(sorted(expected_head)) == log.head:
        return
    raise Conflict(
        f"{log.name}: another writer appended since this command read the ledger "
        f"(head {_short(expected_head)} is now {_short(log.head)})",
        hint="read the ledger again and decide the command again",
        details={"expected_head": list(expected_head), "head": list(log.head)},
    )


def _short(head: Sequence[str]) -> str:
    return "[" + ", ".join(event_id[:12] for event_id in head) + "]"


def _seal_batches(
    batches: Sequence[Sequence[Draft]], log: Log | Position
) -> tuple[list[Event], list[bytes]]:
    """Seal batches one after the other after the log's head."""
    head, lamport = log.head, log.lamport
    events: list[Event] = []
    lines: list[bytes] = []
    for drafts in batches:
        sealed, sealed_lines = record.seal_batch(drafts, head, lamport)
        events.extend(sealed)
        lines.extend(sealed_lines)
        head, lamport = (sealed[-1].id,), sealed[-1].lamport
    return events, lines
