"""The integrity of a ledger's bytes, as audit checks it: every finding, not only the first damage.

Beyond what `chain.scan` refuses, it reports lines that are not canonical, envelopes with
extra or missing keys, unsorted parents, Lamport counters other than 1 + the largest
parent's, a torn tail, and payloads that no longer fit the current schema.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from ledger.log import codec
from ledger.log.record import Event
from ledger.log.walker import (
    BadLine,
    Walker,
    prefix_size,
    split_lines,
    torn_start,
    unfinished_batch,
)

ENVELOPE_KEYS = ("id", "lamport", "parents", "part", "payload", "provenance", "schema", "type")


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
class Integrity:
    """Every finding about a ledger's bytes, and the events that checked out (in file order)."""

    findings: tuple[Finding, ...]
    events: tuple[Event, ...]
    event_lines: tuple[int, ...]  # the 1-based line of each event (bad lines are skipped)


def check(data: bytes) -> Integrity:
    """Check a ledger's bytes line by line and report every problem instead of stopping.

    Beyond what `scan` refuses, it reports lines that are not canonical, envelopes with extra
    or missing keys, batches whose first event names unsorted or repeated parents, Lamport
    counters other than 1 + the largest parent's, and a torn tail.
    """
    lines, rest = split_lines(data)
    if rest:
        completed = check(data + b"\n")
        if not completed.findings:  # only the newline is missing: the event counts
            missing = Finding(
                len(lines) + 1,
                completed.events[-1].id,
                "the last line verifies but has no newline; the next append writes it back "
                "and records a ledger.newline_restored event",
            )
            return Integrity(
                findings=(missing,), events=completed.events, event_lines=completed.event_lines
            )
    walker = Walker()
    findings: list[Finding] = []
    skipped: set[int] = set()
    damaged: set[str | None] = set()
    start = 0
    while start <= len(lines):
        try:
            walker.feed(lines, start)
            break
        except BadLine as bad:
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
    return Integrity(
        findings=tuple(sorted(findings, key=_finding_order)),
        events=tuple(walker.events),
        event_lines=tuple(event_lines),
    )


def _follows_damage(bad: BadLine, line: bytes, damaged: set[str | None]) -> bool:
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
    walker: Walker, data: bytes, lines: list[bytes], rest: bytes, skipped: set[int]
) -> list[Finding]:
    keep, reason = torn_start(walker, len(lines), rest)
    if keep is None:
        finding = Finding(*unfinished_batch(walker, lines))
        # A batch cut short by a damaged line that follows it was reported at that line.
        after = finding.line or 0
        return [] if any(index >= after for index in skipped) else [finding]
    if not reason:
        return []
    size = prefix_size(data, lines, keep)
    return [
        Finding(
            keep + 1,
            None,
            f"torn tail of {len(data) - size} bytes: {reason}; the next append moves "
            "it to a quarantine file and records a ledger.repaired event",
        )
    ]


def schema_findings(events: Sequence[Event], lines: Sequence[int] | None = None) -> list[Finding]:
    """Structure every payload and provenance with the current schema; report those that
    fail at their 1-based line (`lines[i]` for `events[i]`, else i + 1)."""
    findings = []
    for index, event in enumerate(events):
        try:
            event.payload()
            event.written_by()
        except Exception as e:  # noqa: BLE001 - cattrs raises several types; each is a finding
            line = lines[index] if lines else index + 1
            findings.append(Finding(line, event.id, f"schema: {e}"))
    return findings
