"""Checking each line of a ledger against the lines before it: content id, parents, Lamport
counter, batch parts (docs/CONTRACTS.md), and where a torn tail or an unfinished batch begins.

Pure code over lines of bytes, shared by the fast scan (`chain`) and audit's thorough check
(`integrity`); a line that does not fit is raised as `BadLine` for them to report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import NamedTuple

from ledger.log import codec, record
from ledger.log.record import Event

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


class BadLine(Exception):
    """A line that is not a valid next event (internal: becomes damage or a finding)."""

    def __init__(
        self, message: str, event_id: str | None, event: Event | None = None, index: int = -1
    ) -> None:
        super().__init__(message)
        self.message = message
        self.event_id = event_id
        self.event = event
        self.index = index


class OpenBatch(NamedTuple):
    """An unfinished batch: the part its latest event has, and the line index it began at."""

    part: int
    size: int
    first: int


class Walker:
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
        self.open: dict[str, OpenBatch] = {}
        self.events: list[Event] = []
        self.max_lamport = 0
        self.sink = sink
        self.pending: list[Event] = []  # with a sink: the parts of the batch being read
        self.repaired: set[str] = set()  # quarantine files named by ledger.repaired events
        self.last = ""  # the id of the last event fed
        # The byte count of the clean prefix this walker has verified, when a stream keeps it
        # to verify only what is appended later (`chain.resume`); -1 while it cannot resume.
        self.verified = -1

    def _deliver(self, event: Event) -> None:
        """Hand `event` to the sink once its batch is complete (all or none, DESIGN §4)."""
        i, n = event.part
        pending, sink = self.pending, self.sink
        assert sink is not None
        if i == 0:
            # Parts of an earlier batch still pending never finished: the scan reports that
            # batch as damage or as a torn tail, so they must not reach the sink.
            pending.clear()
        pending.append(event)
        if i < n - 1:
            return
        for part in pending:
            if part.type == "ledger.repaired":
                self.repaired.add(str(part.data.get("quarantine")))
            sink(part)
        pending.clear()  # in place: the hot loop holds this list

    def feed(self, lines: Sequence[bytes], start: int = 0) -> None:
        """Verify and record `lines[start:]` in order; raise BadLine at the first that fails."""
        # Once a line: the walker's tables as locals (replay's hot loop).
        check, lamports, heads, open_batches = self.check, self.lamports, self.heads, self.open
        sink, events, pending = self.sink, self.events, self.pending
        for index in range(start, len(lines)):
            try:
                event = check(lines[index])
            except BadLine as bad:
                bad.index = index
                raise
            event_id, lamport, parents, (i, n) = event[:4]
            first = index if i == 0 else open_batches.pop(parents[0]).first
            if i < n - 1:
                open_batches[event_id] = OpenBatch(i, n, first)
            lamports[event_id] = lamport
            if lamport > self.max_lamport:
                self.max_lamport = lamport
            heads.difference_update(parents)
            heads.add(event_id)
            self.last = event_id
            if sink is None:
                events.append(event)
            elif n == 1 and not pending and event.type != "ledger.repaired":
                sink(event)  # a one-event batch, the usual case, goes straight on
            else:
                self._deliver(event)

    def take_written(self, events: Sequence[Event], verified: int) -> None:
        """Take in a batch this process sealed after the walker's head and wrote itself (valid
        by construction), so that the walker can still resume at `verified` bytes."""
        lamports, heads = self.lamports, self.heads
        for event in events:
            lamports[event[0]] = event[1]  # id, lamport (an append's hot path: no descriptors)
            heads.difference_update(event[2])  # parents
            heads.add(event[0])
        if events:
            self.last = events[-1].id
            self.max_lamport = max(self.max_lamport, events[-1].lamport)
        self.verified = verified

    def check(self, line: bytes) -> Event:
        """The event `line` holds if it may follow the events seen so far; else raise BadLine."""
        event_id = codec.id_of_line(line)
        if event_id is None:
            raise BadLine(id_problem(line), claimed_id(line), _parsed(line))
        try:
            event = record.from_record(codec.loads(line))
            lamport = event.lamport
            i, n = event.part
            if event.id != event_id:
                raise BadLine(f"the line names two ids ({event_id}, {event.id})", event_id)
            if event_id in self.lamports:
                raise BadLine("duplicate event (the same id appears on an earlier line)", event_id)
            if type(lamport) is not int or type(i) is not int or type(n) is not int:
                raise BadLine("lamport and part must be integers", event_id)
            if not 0 <= i < n:
                raise BadLine(f"part {list(event.part)} is not an index within its batch", event_id)
            top = self._check_next_part(event, i, n) if i > 0 else self._parents_top(event)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            # Any shape error in a line whose id verifies: a buggy writer or a forged id.
            raise BadLine(f"malformed event: {e}", event_id) from e
        if lamport <= top:
            raise BadLine(
                f"Lamport counter {lamport} is not greater than its parents' ({top})",
                event_id,
                event,
            )
        return event

    def _parents_top(self, event: Event) -> int:
        """The largest Lamport counter among a batch's first event's parents, once they check
        out (earlier events outside unfinished batches)."""
        top = 0
        for parent in event.parents:
            lamport = self.lamports.get(parent)
            if lamport is None:
                raise BadLine(f"parent {parent} is not an earlier event", event.id, event)
            if parent in self.open:
                raise BadLine(f"parent {parent} is inside an unfinished batch", event.id, event)
            if lamport > top:
                top = lamport
        return top

    def _check_next_part(self, event: Event, i: int, n: int) -> int:
        parents = event.parents
        batch = self.open.get(parents[0]) if len(parents) == 1 else None
        if batch is None or batch.part != i - 1 or batch.size != n:
            raise BadLine(
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
                self.open[event.id] = OpenBatch(i, n, index if batch is None else batch.first)


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


def claimed_id(line: bytes) -> str | None:
    """The id a line claims at its start, if it has the shape of one."""
    if not line.startswith(codec.ID_PREFIX):
        return None
    claimed = line[len(codec.ID_PREFIX) : len(codec.ID_PREFIX) + codec.ID_HEX]
    try:
        text = claimed.decode("ascii")
    except UnicodeDecodeError:
        return None
    return text if len(text) == codec.ID_HEX else None


def split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete lines (newline-terminated) and the unterminated rest, if any."""
    # bytes.split on b"\n" only: str.splitlines would also split on U+2028 inside JSON strings.
    lines = data.split(b"\n")
    rest = lines.pop()
    return lines, rest


def torn_start(walker: Walker, line_count: int, rest: bytes) -> tuple[int | None, str]:
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


def unfinished_batch(walker: Walker, lines: list[bytes]) -> tuple[int, str | None, str]:
    """The earliest batch left unfinished where it is not the file's torn suffix: its
    1-based first line, the id that line claims, and what is wrong."""
    batch = min(walker.open.values(), key=lambda b: b.first)
    return (
        batch.first + 1,
        claimed_id(lines[batch.first]),
        f"its batch has only {batch.part + 1} of its {batch.size} events "
        "and is not at the end of the file",
    )


def prefix_size(data: bytes, lines: list[bytes], keep: int) -> int:
    """The byte count of the first `keep` lines with their newlines."""
    if keep == len(lines):
        return data.rfind(b"\n") + 1
    return sum(len(line) + 1 for line in lines[:keep])
