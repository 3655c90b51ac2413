"""Verifying the ledger's bytes: content ids, parents, Lamport counters, batches, torn tails.

Pure code over the bytes of an `events.jsonl`: `scan` is the fast path every read takes (it
raises at the first damaged line), `verify` is audit's thorough path (it reports every finding
and also checks canonical bytes and the line-format contract of docs/CONTRACTS.md).
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import NamedTuple

from attrs import frozen

from ledger.errors import LedgerDamaged
from ledger.log import codec, record
from ledger.log.record import Event

# Keys of a stored line, in canonical (sorted) order.
ENVELOPE_KEYS = ("id", "lamport", "parents", "part", "payload", "provenance", "schema", "type")

_DAMAGE_HINT = (
    "the ledger was edited or damaged in the middle; it is never repaired silently: restore "
    "the file from git (`git diff` shows what changed) and run `tune-ledger audit`; lines "
    "repeated or out of order after a git merge without the tune-ledger driver are put back "
    "in order by `tune-ledger normalize OP`"
)
_GIT_MARKERS = (b"<<<<<<<", b"|||||||", b"=======", b">>>>>>>")
_GIT_CONFLICT = (
    "a git conflict marker: git merged the ledger as text, without the tune-ledger driver; "
    "run `tune-ledger git-setup`, then `git checkout -m -- FILE` to merge it again with the "
    "driver"
)
_CRLF = (
    "the line ends with CR LF: a checkout converted the ledger's line ends (core.autocrlf or "
    "an eol attribute); run `tune-ledger git-setup` (it marks events.jsonl `-text eol=lf`), "
    "commit .gitattributes, then check the file out again (`rm FILE && git checkout -- FILE`)"
)


@frozen
class Finding:
    """One problem found in a ledger: its 1-based line (if any), event id (if known), message."""

    line: int | None
    event_id: str | None
    message: str

    def __str__(self) -> str:
        where = "" if self.line is None else f"{self.line}: "
        event = "" if self.event_id is None else f"event {self.event_id}: "
        return f"{where}{event}{self.message}"


@frozen
class Torn:
    """A torn tail: the bytes from `offset` (line `line`, 1-based) to the end of the file."""

    line: int
    offset: int
    byte_count: int
    reason: str


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

    def line_of(self, index: int) -> int:
        """The 1-based line number of `events[index]` (the valid prefix has no gaps)."""
        return index + 1

    def repaired(self) -> frozenset[str]:
        """The quarantine files that this log's ledger.repaired events record."""
        return frozenset(
            str(e.data.get("quarantine")) for e in self.events if e.type == "ledger.repaired"
        )

    def tip(self) -> Tip:
        """Where this log ends, without its events."""
        return Tip(
            name=self.name,
            head=self.head,
            lamport=self.lamport,
            size=self.size,
            torn=self.torn,
            events=len(self.events),
            repaired=self.repaired(),
        )


class _Bad(Exception):
    """A line that is not a valid next event (internal: becomes damage or a finding)."""

    def __init__(
        self, message: str, event_id: str | None, event: Event | None = None, index: int = -1
    ) -> None:
        super().__init__(message)
        self.message = message
        self.event_id = event_id
        self.event = event
        self.index = index


class _Open(NamedTuple):
    """An unfinished batch: the part its latest event has, and the line index it began at."""

    part: int
    size: int
    first: int


def _ignore(_event: Event) -> None:
    """No sink: the walker keeps its events instead."""


class _Walker:
    """Checks lines in order against the events before them and remembers what it saw.

    Without a sink it keeps every event (`events`), for readers that need them all (audit,
    merge, normalize). With a sink it keeps none: each event goes to the sink once its batch
    is complete, so a torn batch at the end never reaches it, and replay's memory is the
    state's alone (keeping every parsed record costs more than parsing it, measured 2.3x).
    """

    def __init__(self, sink: Callable[[Event], object] | None = None) -> None:
        self.lamports: dict[str, int] = {}
        self.heads: set[str] = set()
        # Unfinished batches by the id of their latest part: the next part must name it.
        self.open: dict[str, _Open] = {}
        self.events: list[Event] = []
        self.max_lamport = 0
        self.sink = sink
        self.pending: list[Event] = []  # with a sink: the parts of the batch being read
        self.repaired: set[str] = set()  # quarantine files named by ledger.repaired events

    def _deliver(self, event: Event) -> None:
        """Hand `event` to the sink once its batch is complete (all or none, DESIGN §4)."""
        i, n = event.part
        if i == 0:
            # Parts of an earlier batch still pending never finished: the scan reports that
            # batch as damage or as a torn tail, so they must not reach the sink.
            self.pending.clear()
        if n > 1:
            self.pending.append(event)
            if i < n - 1:
                return
            batch = self.pending[:]
            self.pending.clear()  # in place: the hot loop holds this list
        else:
            batch = [event]
        sink = self.sink
        assert sink is not None
        for part in batch:
            if part.type == "ledger.repaired":
                self.repaired.add(str(part.data.get("quarantine")))
            sink(part)

    def feed(self, lines: Sequence[bytes], start: int = 0) -> None:
        """Verify and record `lines[start:]` in order; raise _Bad at the first that does not fit.

        This loop is the replay hot path: it only detects a problem with cheap tests and
        leaves explaining it to `diagnose`, which re-checks that one line step by step.
        """
        lamports, open_batches, heads = self.lamports, self.open, self.heads
        loads, from_record, sha256 = codec.loads, record.from_record, hashlib.sha256
        keep, pending = self.sink is None, self.pending
        sink: Callable[[Event], object] = self.sink or _ignore
        events_append, deliver = self.events.append, self._deliver
        prefix, id_end, body_start = codec.ID_PREFIX, codec.ID_END, codec.BODY_START
        max_lamport = self.max_lamport
        for index in range(start, len(lines)):
            line = lines[index]
            # The content id, checked from the raw bytes (as codec.id_of_line, inlined: this
            # is a third of the loop's time).
            event_id = sha256(b"{" + line[body_start:]).hexdigest()[: codec.ID_HEX]
            try:
                event = from_record(loads(line))
                i, n = event.part
                lamport = event.lamport
                parents = event.parents
                if i == 0:
                    top = 0
                    for parent in parents:
                        parent_lamport = lamports[parent]
                        if parent_lamport > top:
                            top = parent_lamport
                    first = index
                    fits = not open_batches or open_batches.keys().isdisjoint(parents)
                else:
                    batch = open_batches[parents[0]]
                    top = lamports[parents[0]]
                    first = batch.first
                    fits = len(parents) == 1 and batch.part == i - 1 and batch.size == n
            except (KeyError, TypeError, ValueError, IndexError):
                fits = False
            if not (
                fits
                and event.id == event_id
                and line.startswith(prefix)
                and line[id_end:body_start] == b'",'
                and line[len(prefix) : id_end] == event_id.encode()
                and type(lamport) is int
                and type(i) is int
                and type(n) is int
                and 0 <= i < n
                and top < lamport
                and event_id not in lamports
            ):
                self.max_lamport = max_lamport
                raise self.diagnose(index, line)
            if i > 0:
                del open_batches[parents[0]]
            if i < n - 1:
                open_batches[event_id] = _Open(i, n, first)
            lamports[event_id] = lamport
            if lamport > max_lamport:
                max_lamport = lamport
            heads.difference_update(parents)
            heads.add(event_id)
            if keep:
                events_append(event)
            elif n == 1 and not pending and event.type != "ledger.repaired":
                sink(event)  # the common case, inlined: a one-event batch goes straight on
            else:
                deliver(event)
        self.max_lamport = max_lamport

    def diagnose(self, index: int, line: bytes) -> _Bad:
        """Why `line` (the `index`-th, 0-based) cannot be the next event."""
        try:
            self.check(line)
        except _Bad as bad:
            bad.index = index
            return bad
        return _Bad("the line does not fit the events before it", _claimed_id(line), index=index)

    def check(self, line: bytes) -> Event:
        """The event `line` holds if it may follow the events seen so far; else raise _Bad."""
        event_id = codec.id_of_line(line)
        if event_id is None:
            raise _Bad(id_problem(line), _claimed_id(line), _parsed(line))
        try:
            event = record.from_record(codec.loads(line))
            self._check_envelope(event_id, event)
            top = self._check_parents(event)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            # Any shape error in a line whose id verifies: a buggy writer or a forged id.
            raise _Bad(f"malformed event: {e}", event_id) from e
        if event.lamport <= top:
            raise _Bad(
                f"Lamport counter {event.lamport} is not greater than its parents' ({top})",
                event_id,
                event,
            )
        return event

    def _check_envelope(self, event_id: str, event: Event) -> None:
        if event.id != event_id:
            raise _Bad(f"the line names two ids ({event_id}, {event.id})", event_id)
        if event_id in self.lamports:
            raise _Bad("duplicate event (the same id appears on an earlier line)", event_id)
        i, n = event.part
        if type(event.lamport) is not int or type(i) is not int or type(n) is not int:
            raise _Bad("lamport and part must be integers", event_id)
        if not 0 <= i < n:
            raise _Bad(f"part {list(event.part)} is not an index within its batch", event_id)

    def _check_parents(self, event: Event) -> int:
        """The largest Lamport counter among the event's parents, once they check out."""
        i, n = event.part
        if i > 0:
            return self._check_next_part(event, i, n)
        top = 0
        for parent in event.parents:
            lamport = self.lamports.get(parent)
            if lamport is None:
                raise _Bad(f"parent {parent} is not an earlier event", event.id, event)
            if parent in self.open:
                raise _Bad(f"parent {parent} is inside an unfinished batch", event.id, event)
            top = max(top, lamport)
        return top

    def _check_next_part(self, event: Event, i: int, n: int) -> int:
        parents = event.parents
        batch = self.open.get(parents[0]) if len(parents) == 1 else None
        if batch is None or batch.part != i - 1 or batch.size != n:
            raise _Bad(
                f"part {i} of a batch of {n} does not directly follow part {i - 1} "
                "(its only parent must be the batch's previous event)",
                event.id,
                event,
            )
        return self.lamports[parents[0]]

    def tolerate(self, index: int, event: Event) -> None:
        """Take in a bad line's event as far as it is sane, so that the lines after it are
        not reported again for naming it (audit reports the cause once)."""
        lamport = event.lamport if type(event.lamport) is int else 0
        self.lamports.setdefault(event.id, lamport)
        self.heads.difference_update(event.parents)
        self.heads.add(event.id)
        with suppress(TypeError, ValueError):
            i, n = event.part
            batch = self.open.pop(event.parents[0], None) if i > 0 and event.parents else None
            if 0 <= i < n - 1:
                self.open[event.id] = _Open(i, n, index if batch is None else batch.first)


def id_problem(line: bytes) -> str:
    """Why a line's content id does not verify, in words for the user."""
    if line.endswith(b"\r") and codec.id_of_line(line[:-1]) is not None:
        return _CRLF
    if line.startswith(_GIT_MARKERS):
        return _GIT_CONFLICT
    return "content id does not match the line's bytes (edited or damaged)"


def _parsed(line: bytes) -> Event | None:
    """The event a line holds if it parses, whatever its id (to name it in findings)."""
    try:
        return record.from_record(codec.loads(line))
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def _claimed_id(line: bytes) -> str | None:
    """The id a line claims at its start, if it has the shape of one."""
    if not line.startswith(codec.ID_PREFIX):
        return None
    claimed = line[len(codec.ID_PREFIX) : len(codec.ID_PREFIX) + codec.ID_HEX]
    try:
        text = claimed.decode("ascii")
    except UnicodeDecodeError:
        return None
    return text if len(text) == codec.ID_HEX else None


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while parsing millions of acyclic dicts."""
    # Each event allocates several dicts and lists; with the collector on, its generational
    # passes rescan the growing set of live containers (measured: 16 → 11.6 µs per event).
    # Nothing parsed here forms a cycle, so nothing is leaked by pausing it.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _split(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete lines (newline-terminated) and the unterminated rest, if any."""
    # bytes.split on b"\n" only: str.splitlines would also split on U+2028 inside JSON strings.
    lines = data.split(b"\n")
    rest = lines.pop()
    return lines, rest


def scan(data: bytes, name: str) -> Log:
    """Verify a ledger's bytes and return its events; raise LedgerDamaged at the first bad line.

    A torn tail (an unterminated last line, or a last batch missing its final parts) is left
    out of the events and reported in `Log.torn`.
    """
    return Scanner(name).scan(data)


class Scanner:
    """Scans successive versions of one ledger, verifying only what was appended since the
    last clean scan (a command reads, then appends under the lock: one full parse, not two)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._reset()

    def _reset(self) -> None:
        self._data = b""
        self._lines: list[bytes] = []
        self._walker = _Walker()

    def scan(self, data: bytes) -> Log:
        """Like `scan`, reusing the previous scan when `data` extends its bytes."""
        if not data.startswith(self._data):
            self._reset()  # rewritten (truncated, merged, checked out): verify from scratch
        new_lines, rest = _split(data[len(self._data) :])
        lines = self._lines
        start = len(lines)
        lines.extend(new_lines)
        try:
            with paused_gc():
                self._walker.feed(lines, start)
            keep, reason = _torn_start(self._walker, len(lines), rest)
            if keep is None:
                raise _unfinished_batch(self._walker, lines, self.name)
        except _Bad as bad:
            self._reset()
            raise _damaged(self.name, bad.index + 1, bad.event_id, bad.message) from None
        except LedgerDamaged:
            self._reset()
            raise
        log = _log(self.name, data, lines, self._walker, keep, reason)
        if log.torn is None:
            self._data = data
        else:
            self._reset()  # the tail will be cut off and replaced: do not build on it
        return log


@frozen
class Tip:
    """Where a verified ledger ends, without its events: what a command needs beside the
    replayed state (the head to append after, the counter, the size, a torn tail)."""

    name: str
    head: tuple[str, ...]
    lamport: int
    size: int
    torn: Torn | None
    events: int
    # Quarantine files that ledger.repaired events record (an append checks the others).
    repaired: frozenset[str]
    # The backend's fingerprint of the bytes this tip was read from (see FileStore).
    stamp: object = None


def stream(data: bytes, name: str, sink: Callable[[Event], object]) -> Tip:
    """Verify a ledger's bytes like `scan`, handing each event of a complete batch to `sink`
    in file order instead of keeping them; raise LedgerDamaged at the first bad line."""
    lines, rest = _split(data)
    walker = _Walker(sink)
    try:
        with paused_gc():
            walker.feed(lines)
    except _Bad as bad:
        raise _damaged(name, bad.index + 1, bad.event_id, bad.message) from None
    if walker.open or rest:
        # Rare: a torn tail, or a batch left unfinished (damage). The sink has seen only
        # complete batches; the keeping scan names the tail or the damage exactly.
        log = scan(data, name)
        return Tip(
            name=name,
            head=log.head,
            lamport=log.lamport,
            size=log.size,
            torn=log.torn,
            events=len(log.events),
            repaired=frozenset(walker.repaired),
        )
    return Tip(
        name=name,
        head=tuple(sorted(walker.heads)),
        lamport=walker.max_lamport,
        size=len(data),
        torn=None,
        events=len(lines),
        repaired=frozenset(walker.repaired),
    )


def _torn_start(walker: _Walker, line_count: int, rest: bytes) -> tuple[int | None, str]:
    """How many complete lines precede the torn tail (None: an unfinished batch that is not
    the file's suffix, which is damage), and why the tail is torn ("" if it is not)."""
    if not walker.open:
        return line_count, "the last line has no newline (an interrupted write)" if rest else ""
    if len(walker.open) > 1:
        return None, ""
    (batch,) = walker.open.values()
    if line_count - batch.first != batch.part + 1:
        return None, ""
    unterminated = " and a line without its newline" if rest else ""
    return batch.first, (
        f"the last batch has only {batch.part + 1} of its {batch.size} "
        f"events{unterminated} (an interrupted write)"
    )


def _unfinished_batch(walker: _Walker, lines: list[bytes], name: str) -> LedgerDamaged:
    finding = _unfinished_finding(walker, lines)
    return _damaged(name, finding.line or 0, finding.event_id, finding.message)


def _unfinished_finding(walker: _Walker, lines: list[bytes]) -> Finding:
    """The earliest batch left unfinished where it is not the file's torn suffix."""
    batch = min(walker.open.values(), key=lambda b: b.first)
    return Finding(
        batch.first + 1,
        _claimed_id(lines[batch.first]),
        f"its batch has only {batch.part + 1} of its {batch.size} events "
        "and is not at the end of the file",
    )


def _log(
    name: str, data: bytes, lines: list[bytes], walker: _Walker, keep: int, reason: str
) -> Log:
    events = walker.events
    if keep == len(events):
        head, lamport = walker.heads, walker.max_lamport
    else:  # rare: a torn batch is left out, so its parts must not count as heads
        events = events[:keep]
        head, lamport = _head_of(events), max((e.lamport for e in events), default=0)
    size = _prefix_size(data, lines, keep)
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


def _prefix_size(data: bytes, lines: list[bytes], keep: int) -> int:
    """The byte count of the first `keep` lines with their newlines."""
    if keep == len(lines):
        return data.rfind(b"\n") + 1
    return sum(len(line) + 1 for line in lines[:keep])


@frozen
class Verification:
    """Every finding about a ledger's bytes, and the events that verified (in file order)."""

    findings: tuple[Finding, ...]
    events: tuple[Event, ...]
    event_lines: tuple[int, ...]  # the 1-based line of each event (bad lines are skipped)


def verify(data: bytes) -> Verification:
    """Check a ledger's bytes line by line and report every problem instead of stopping.

    Beyond what `scan` refuses, it reports lines that are not canonical, envelopes with extra
    or missing keys, batches whose first event names unsorted or repeated parents, Lamport
    counters other than 1 + the largest parent's, and a torn tail.
    """
    lines, rest = _split(data)
    walker = _Walker()
    findings: list[Finding] = []
    skipped: set[int] = set()
    damaged: set[str | None] = set()
    start = 0
    while start <= len(lines):
        try:
            walker.feed(lines, start)
            break
        except _Bad as bad:
            skipped.add(bad.index)
            if not _follows_damage(bad, lines[bad.index], damaged):
                findings.append(Finding(bad.index + 1, bad.event_id, bad.message))
                damaged.add(bad.event_id)
            if bad.event is not None:
                walker.tolerate(bad.index, bad.event)
            start = bad.index + 1
    event_lines = [index + 1 for index in range(len(lines)) if index not in skipped]
    for line_no, event in zip(event_lines, walker.events, strict=True):
        findings.extend(_contract_findings(line_no, lines[line_no - 1], event, walker.lamports))
    findings.extend(_tail_findings(walker, data, lines, rest, skipped))
    return Verification(
        findings=tuple(sorted(findings, key=_finding_order)),
        events=tuple(walker.events),
        event_lines=tuple(event_lines),
    )


def _follows_damage(bad: _Bad, line: bytes, damaged: set[str | None]) -> bool:
    """True when a line with a valid id fails only by naming a line already reported."""
    return (
        bad.event is not None
        and codec.id_of_line(line) is not None
        and not damaged.isdisjoint(bad.event.parents)
    )


def _finding_order(finding: Finding) -> int:
    return finding.line or 0


def _contract_findings(
    line_no: int, line: bytes, event: Event, lamports: dict[str, int]
) -> list[Finding]:
    """What a valid-looking event breaks of the line-format contract (docs/CONTRACTS.md)."""
    found = []
    record_keys = tuple(codec.loads(line))
    if record_keys != ENVELOPE_KEYS:
        found.append(f"envelope keys are {list(record_keys)}, expected {list(ENVELOPE_KEYS)}")
    elif not codec.is_canonical_line(line):
        found.append("the line is not canonical JSON (sorted keys, no spaces, UTF-8)")
    expected = 1 + max((lamports[p] for p in event.parents), default=0)
    if event.lamport != expected:
        found.append(
            f"Lamport counter {event.lamport}, expected {expected} (1 + the largest parent's)"
        )
    if event.part[0] == 0 and list(event.parents) != sorted(set(event.parents)):
        found.append("a batch's first event must name its parents sorted and once each")
    return [Finding(line_no, event.id, message) for message in found]


def _tail_findings(
    walker: _Walker, data: bytes, lines: list[bytes], rest: bytes, skipped: set[int]
) -> list[Finding]:
    keep, reason = _torn_start(walker, len(lines), rest)
    if keep is None:
        finding = _unfinished_finding(walker, lines)
        # A batch cut short by a damaged line that follows it was reported at that line.
        after = finding.line or 0
        return [] if any(index >= after for index in skipped) else [finding]
    if not reason:
        return []
    size = _prefix_size(data, lines, keep)
    return [
        Finding(
            keep + 1,
            None,
            f"torn tail of {len(data) - size} bytes: {reason}; the next append moves "
            "it to a quarantine file and records a ledger.repaired event",
        )
    ]


def verify_schema(log: Log) -> list[Finding]:
    """Structure every payload and provenance with the current schema; report those that fail."""
    findings = []
    for index, event in enumerate(log.events):
        try:
            event.payload()
            event.written_by()
        except Exception as e:  # noqa: BLE001 - cattrs raises several types; each is a finding
            findings.append(Finding(log.line_of(index), event.id, f"schema: {e}"))
    return findings


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
