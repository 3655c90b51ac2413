"""The event store: the only code that reads or writes `events.jsonl` (DESIGN §4).

An append is atomic (one command's lines in one write), durable (fsync before it returns) and
serialized across processes by an exclusive flock on a lock file beside the ledger. A torn tail
left by a crash is moved to a quarantine file and recorded by a `ledger.repaired` event before
the next batch; damage in the middle of the file is refused and never rewritten.
`MemoryStore` and `FileStore` share every rule and differ only in where the bytes live.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Protocol

from attrs import evolve, frozen

from ledger.errors import Conflict
from ledger.log import chain, codec, record
from ledger.log.atomic import fsync_dir
from ledger.log.chain import Finding, Log, Tip, Torn, Verification, verify_schema
from ledger.log.files import ledger_path, lock_path
from ledger.log.locks import exclusive_lock, opened_for_reading
from ledger.log.record import Draft, Event
from ledger.schema.events import LedgerRepaired

__all__ = [
    "AppendResult",
    "FileStore",
    "Finding",
    "Log",
    "MemoryStore",
    "Quarantined",
    "Store",
    "Tip",
    "Torn",
    "chain_findings",
    "ledger_path",
    "verify_schema",
]

QUARANTINE_SUFFIX = ".quarantine-"


@frozen
class AppendResult:
    """What an append wrote: the command's sealed events, the repair events written before
    them (a torn tail quarantined now, or a quarantine an interrupted repair left unrecorded),
    and the head after them."""

    events: tuple[Event, ...]
    repairs: tuple[Event, ...]
    head: tuple[str, ...]
    # Where the ledger ends now, for a next append by the same writer (None: read it again).
    tip: Tip | None = None


@frozen
class Quarantined:
    """A quarantine file beside a ledger: its name, size and sha256 digest."""

    name: str
    byte_count: int
    digest: str


class _Session(Protocol):
    """The primitive operations of one append, all done while holding the store's lock."""

    def data(self) -> bytes: ...

    def stamp(self, tail: int) -> tuple[object, int, bytes]: ...

    def quarantine(self, name: str, torn: bytes) -> None: ...

    def truncate(self, size: int) -> None: ...

    def write(self, lines: bytes) -> None: ...


class Store(ABC):
    """The rules of reading and appending, over the byte primitives of a backend."""

    name: str

    def __init__(self, name: str) -> None:
        self.name = name
        self._scanner = chain.Scanner(name)
        self._scanner_lock = threading.Lock()

    def read(self) -> Log:
        """The verified log; raises LedgerDamaged naming path:line if the middle is damaged."""
        return self._scan(self._snapshot())

    def _scan(self, data: bytes) -> Log:
        with self._scanner_lock:
            return self._scanner.scan(data)

    def stream(self, sink: Callable[[Event], object]) -> Tip:
        """Verify the log and hand its events to `sink` in file order, keeping none of them
        (replay's path); the tip it returns lets `append` skip re-reading the file."""
        data, identity = self._read_stamped()
        tip = chain.stream(data, self.name, sink)
        names = self.quarantine_names()
        if tip.torn is not None or any(name not in tip.repaired for name in names):
            return tip  # the next append has a repair to make: it takes the full path
        stamp = _Stamp(
            identity=identity,
            size=len(data),
            tail=data[-_TAIL:],
            next_quarantine=_next_quarantine_name(self.name, names),
        )
        return evolve(tip, stamp=stamp)

    def append(
        self,
        drafts: Sequence[Draft],
        *,
        expected_head: tuple[str, ...] | None,
        tip: Tip | None = None,
    ) -> AppendResult:
        """Append one command's events atomically and durably, repairing a torn tail first.

        Raises Conflict when `expected_head` is given and another writer moved the head.
        `tip`, from `stream`, spares re-reading and re-verifying the file when its size,
        identity and last bytes show that nothing was written since.
        """
        with self._session() as session:
            if tip is not None and self._unchanged_since(tip, session):
                # Nothing was written since `tip` was read: no head moved, no tail to repair.
                _check_head(tip, expected_head)
                if not drafts:
                    return AppendResult(events=(), repairs=(), head=tip.head, tip=tip)
                events, lines = _seal_batches([drafts], tip)
                written = b"".join(lines)
                session.write(written)
                return AppendResult(
                    events=tuple(events),
                    repairs=(),
                    head=(events[-1].id,),
                    tip=_after(tip, events, written),
                )
            data = session.data()
            log = self._scan(data)
            _check_head(log, expected_head)
            if not drafts:
                return AppendResult(events=(), repairs=(), head=log.head)
            repairs, torn = self._plan_repairs(data, log)
            # Seal everything before changing anything: a draft that cannot be encoded
            # must leave the ledger and its quarantine files as they were.
            events, lines = _seal_batches(
                [*([Draft(r, drafts[0].provenance)] for r in repairs), drafts], log
            )
            if torn is not None:
                _cut_torn_tail(session, torn, log.size)
            session.write(b"".join(lines))
        return AppendResult(
            events=tuple(events[len(repairs) :]),
            repairs=tuple(events[: len(repairs)]),
            head=(events[-1].id,),
        )

    def unchanged_since(self, tip: Tip) -> bool:
        """True when the ledger still holds exactly the bytes `tip` was read from."""
        return self._matches(tip, self._stamp_now)

    def _unchanged_since(self, tip: Tip, session: _Session) -> bool:
        return self._matches(tip, session.stamp)

    def _matches(self, tip: Tip, stamp_now: Callable[[int], tuple[object, int, bytes]]) -> bool:
        """True when the ledger holds exactly the bytes `tip` was read from (checked by file
        identity, size and last 4 KiB: an append always grows the file; anything else that
        rewrote it changes its identity or its tail) and no quarantine file appeared since."""
        stamp = tip.stamp
        if not isinstance(stamp, _Stamp):
            return False
        return stamp_now(len(stamp.tail)) == (
            stamp.identity,
            stamp.size,
            stamp.tail,
        ) and not self.quarantine_exists(stamp.next_quarantine)

    def _plan_repairs(self, data: bytes, log: Log) -> tuple[list[LedgerRepaired], _Torn | None]:
        """The repair events to write before the command's batch (DESIGN §4: a torn tail is
        kept, recorded, never silently dropped), and the torn bytes to move to quarantine."""
        names = self.quarantine_names()
        unrecorded = (
            [_quarantined(name, self.quarantine_bytes(name)) for name in _unrecorded(names, log)]
            if names
            else []
        )
        # A quarantine whose repair event never became durable (a crash right after the
        # tail was cut) is recorded now, at the line where the ledger then ended.
        repairs = [
            LedgerRepaired(
                quarantine=q.name,
                line=len(log.events) + 1,
                byte_count=q.byte_count,
                digest=q.digest,
            )
            for q in unrecorded
        ]
        if log.torn is None:
            return repairs, None
        torn = data[log.torn.offset :]
        digest = codec.digest(torn)
        # A crash after these bytes were kept but before they were cut: reuse that copy.
        kept = next((q for q in unrecorded if q.digest == digest), None)
        if kept is not None:
            repairs = [r for r in repairs if r.quarantine != kept.name]
        name = kept.name if kept is not None else _next_quarantine_name(self.name, names)
        repairs.append(
            LedgerRepaired(quarantine=name, line=log.torn.line, byte_count=len(torn), digest=digest)
        )
        return repairs, _Torn(name=name, data=torn, kept=kept is not None)

    def findings(self) -> list[Finding]:
        """Every integrity finding: the chain's, then quarantine files unaccounted for."""
        verification = chain.verify(self._snapshot())
        return [*verification.findings, *_quarantine_findings(self.quarantines(), verification)]

    def quarantines(self) -> list[Quarantined]:
        """The quarantine files that torn-tail repairs left beside the ledger."""
        return [_quarantined(name, self.quarantine_bytes(name)) for name in self.quarantine_names()]

    @abstractmethod
    def quarantine_names(self) -> list[str]:
        """The names of the quarantine files beside the ledger, oldest first."""

    @abstractmethod
    def quarantine_bytes(self, name: str) -> bytes:
        """The bytes kept in one quarantine file."""

    @abstractmethod
    def quarantine_exists(self, name: str) -> bool:
        """True when a quarantine file of that name is beside the ledger."""

    def _snapshot(self) -> bytes:
        """The ledger's bytes as one consistent snapshot (no append half seen)."""
        return self._read_stamped()[0]

    @abstractmethod
    def _read_stamped(self) -> tuple[bytes, object]:
        """The ledger's bytes as one consistent snapshot, and the identity of what holds them
        (a file replaced by a checkout is another file, even with the same bytes)."""

    @abstractmethod
    def _stamp_now(self, tail: int) -> tuple[object, int, bytes]:
        """The ledger's identity, size and last `tail` bytes now, read without writing."""

    @abstractmethod
    def _session(self) -> AbstractContextManager[_Session]:
        """Hold the store's exclusive lock and give the primitives of one append."""


def _after(tip: Tip, events: Sequence[Event], written: bytes) -> Tip:
    """The tip after `events` (whose lines are `written`) were appended at `tip`."""
    stamp = tip.stamp
    assert isinstance(stamp, _Stamp)
    size = stamp.size + len(written)
    # Built directly: attrs.evolve inspects the class on every call, which an append notices.
    return Tip(
        name=tip.name,
        head=(events[-1].id,),
        lamport=events[-1].lamport,
        size=size,
        torn=None,
        events=tip.events + len(events),
        repaired=tip.repaired,
        stamp=_Stamp(
            identity=stamp.identity,
            size=size,
            tail=(stamp.tail + written)[-_TAIL:],
            next_quarantine=stamp.next_quarantine,
        ),
    )


def _check_head(log: Log | Tip, expected_head: tuple[str, ...] | None) -> None:
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
    batches: Sequence[Sequence[Draft]], log: Log | Tip
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


# How much of the ledger's end an append compares with what the command read: an append
# never rewrites earlier bytes, so another writer's batch shows in the size, and anything
# else that rewrote the file (a checkout, a hand edit) shows in its identity or its end.
_TAIL = 4096


@frozen
class _Stamp:
    """What the bytes behind a tip looked like: holder identity, size, last bytes, and the
    quarantine file the next torn-tail repair would create."""

    identity: object
    size: int
    tail: bytes
    next_quarantine: str


@frozen
class _Torn:
    """Torn bytes to move to the quarantine file `name` (`kept`: already there)."""

    name: str
    data: bytes
    kept: bool


def _cut_torn_tail(session: _Session, torn: _Torn, size: int) -> None:
    """Keep the torn bytes in quarantine (fsynced), then cut the ledger back to `size`."""
    # In this order a crash in between leaves a copy that the next append reuses: never a
    # loss, and never bytes that the next batch would be glued onto.
    if not torn.kept:
        session.quarantine(torn.name, torn.data)
    session.truncate(size)


def _next_quarantine_name(ledger_name: str, names: Sequence[str]) -> str:
    """The next free numbered quarantine file name beside the ledger."""
    base = ledger_name.rpartition("/")[2]
    number = max((_number(name) for name in names), default=0) + 1
    return f"{base}{QUARANTINE_SUFFIX}{number}"


def _unrecorded(names: Sequence[str], log: Log) -> list[str]:
    """The quarantine files that no ledger.repaired event of the log names."""
    recorded = log.repaired()
    return [name for name in names if name not in recorded]


def _quarantine_findings(
    present: Sequence[Quarantined], verification: Verification
) -> list[Finding]:
    """Quarantine files no repair event accounts for, or that differ from what it recorded."""
    recorded = {
        event.data.get("quarantine"): (line, event)
        for line, event in zip(verification.event_lines, verification.events, strict=True)
        if event.type == LedgerRepaired.TYPE
    }
    findings = []
    for found in present:
        if found.name not in recorded:
            findings.append(
                Finding(
                    None,
                    None,
                    f"quarantine file {found.name} "
                    f"({found.byte_count} bytes) is not recorded by any "
                    "ledger.repaired event; inspect it",
                )
            )
            continue
        line, event = recorded[found.name]
        if (event.data.get("digest"), event.data.get("byte_count")) != (
            found.digest,
            found.byte_count,
        ):
            findings.append(
                Finding(
                    line,
                    event.id,
                    f"quarantine file {found.name} differs "
                    "from what this ledger.repaired event recorded",
                )
            )
    names = {found.name for found in present}
    findings.extend(
        Finding(line, event.id, f"quarantine file {name} named by this event is missing")
        for name, (line, event) in recorded.items()
        if name not in names
    )
    return findings


# --- the file backend ------------------------------------------------------------------------


class FileStore(Store):
    """A ledger file, locked by flock on `<ledger>.lock`, torn tails kept in quarantine files."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(str(path))
        self.path = Path(path)
        self.lock_path = lock_path(self.path)
        # Plain strings for the append path: pathlib's objects cost more per call than the
        # system calls they wrap, and an append is a handful of system calls.
        self._folder = str(self.path.parent)
        self._lock_name = str(self.lock_path)

    def quarantine_names(self) -> list[str]:
        """The names of the quarantine files beside the ledger, oldest first."""
        prefix = self.path.name + QUARANTINE_SUFFIX
        if not self.path.parent.is_dir():
            return []
        found = [p.name for p in self.path.parent.iterdir() if p.name.startswith(prefix)]
        return sorted(found, key=_number)

    def quarantine_bytes(self, name: str) -> bytes:
        """The bytes kept in one quarantine file."""
        return (self.path.parent / name).read_bytes()

    def quarantine_exists(self, name: str) -> bool:
        """True when a quarantine file of that name is beside the ledger."""
        return os.path.lexists(os.path.join(self._folder, name))

    def _read_stamped(self) -> tuple[bytes, object]:
        with opened_for_reading(self.path) as fd:
            return (b"", None) if fd is None else (_read_all(fd), _identity(fd))

    def _stamp_now(self, tail: int) -> tuple[object, int, bytes]:
        with opened_for_reading(self.path) as fd:
            return (None, 0, b"") if fd is None else _stamp_of(fd, tail)

    @contextmanager
    def _session(self) -> Iterator[_Session]:
        with exclusive_lock(self._lock_name):
            session = _FileSession(self.path)
            try:
                yield session
            finally:
                session.close()


class _FileSession:
    """The primitives of one append to a ledger file, used while its lock is held."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Read and written through one descriptor, so that a file replaced meanwhile (by a
        # checkout) is never read in one version and appended to in another.
        try:
            self.fd: int | None = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        except FileNotFoundError:
            self.fd = None

    def data(self) -> bytes:
        return b"" if self.fd is None else _read_all(self.fd)

    def stamp(self, tail: int) -> tuple[object, int, bytes]:
        return (None, 0, b"") if self.fd is None else _stamp_of(self.fd, tail)

    def quarantine(self, name: str, torn: bytes) -> None:
        _write_new_file(self.path.with_name(name), torn)

    def truncate(self, size: int) -> None:
        if self.fd is None:  # a torn tail implies the file exists; nothing to cut otherwise
            return
        os.ftruncate(self.fd, size)
        os.fsync(self.fd)

    def write(self, lines: bytes) -> None:
        created = self.fd is None
        if self.fd is None:
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            self.fd = os.open(self.path, flags, 0o644)
        size = os.fstat(self.fd).st_size
        try:
            _write_all(self.fd, lines)
            os.fsync(self.fd)
            if created:  # the new file's entry in its folder must be durable too
                fsync_dir(self.path.parent)
        except BaseException:
            # The append reports failure, so none of its lines may stay (all or none), and
            # a ledger it was creating must not be left behind empty.
            with suppress(OSError):
                os.ftruncate(self.fd, size)
                if created:
                    self.path.unlink()
            raise

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)


def _stamp_of(fd: int, tail: int) -> tuple[object, int, bytes]:
    """An open ledger file's identity, size and last `tail` bytes."""
    size = os.fstat(fd).st_size
    start = max(size - tail, 0)
    return _identity(fd), size, os.pread(fd, size - start, start)


def _identity(fd: int) -> tuple[int, int]:
    """The (device, inode) of an open file: a checkout that replaced the ledger changes it."""
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks = []
    offset = 0
    while chunk := os.pread(fd, max(size - offset, 1 << 16), offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    """Write `data` with one os.write; loop only if the kernel writes less (a signal, ENOSPC)."""
    written = os.write(fd, data)
    while written < len(data):
        written += os.write(fd, memoryview(data)[written:])


def _write_new_file(path: Path, data: bytes) -> None:
    """Create `path` (it must not exist) holding `data`, durably (file and directory)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)


def _number(name: str) -> int:
    suffix = name.rpartition(QUARANTINE_SUFFIX)[2]
    return int(suffix) if suffix.isdigit() else 0


def _quarantined(name: str, data: bytes) -> Quarantined:
    return Quarantined(name=name, byte_count=len(data), digest=codec.digest(data))


def chain_findings(path: Path | str) -> list[Finding]:
    """Every integrity finding about the ledger file at `path` (for audit)."""
    return FileStore(path).findings()


# --- the memory backend ----------------------------------------------------------------------


class MemoryStore(Store):
    """A ledger held in memory with the same rules; tests may set its raw bytes directly."""

    def __init__(self, data: bytes = b"", name: str = "memory/events.jsonl") -> None:
        super().__init__(name)
        self._data = bytes(data)
        self._quarantined: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._generation = 0  # bumped by set_raw: tampering makes it another holder

    @property
    def raw(self) -> bytes:
        """The ledger's bytes as stored."""
        return self._data

    def set_raw(self, data: bytes) -> None:
        """Replace the stored bytes (to simulate a crash or tampering in tests)."""
        with self._lock:
            self._data = bytes(data)
            self._generation += 1

    def quarantine_names(self) -> list[str]:
        """The names of the quarantine files beside the ledger, oldest first."""
        return list(self._quarantined)

    def quarantine_bytes(self, name: str) -> bytes:
        """The bytes kept in one quarantine file."""
        return self._quarantined[name]

    def add_quarantine(self, name: str, data: bytes) -> None:
        """Place a quarantine file beside the ledger (to simulate an interrupted repair)."""
        self._quarantined[name] = bytes(data)

    def quarantine_exists(self, name: str) -> bool:
        """True when a quarantine file of that name is beside the ledger."""
        return name in self._quarantined

    def _read_stamped(self) -> tuple[bytes, object]:
        with self._lock:
            return self._data, self._generation

    def _stamp_now(self, tail: int) -> tuple[object, int, bytes]:
        with self._lock:
            return _MemorySession(self).stamp(tail)

    @contextmanager
    def _session(self) -> Iterator[_Session]:
        with self._lock:
            yield _MemorySession(self)


class _MemorySession:
    """The primitives of one append to a MemoryStore, used while its lock is held."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def data(self) -> bytes:
        return self.store._data

    def stamp(self, tail: int) -> tuple[object, int, bytes]:
        data = self.store._data
        return self.store._generation, len(data), data[len(data) - tail :] if tail else b""

    def quarantine(self, name: str, torn: bytes) -> None:
        self.store._quarantined[name] = torn

    def truncate(self, size: int) -> None:
        self.store._data = self.store._data[:size]

    def write(self, lines: bytes) -> None:
        self.store._data += lines
