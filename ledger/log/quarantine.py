"""Torn tails kept in quarantine: the bytes a crash left unfinished are moved beside the
ledger, recorded by a `ledger.repaired` event, and never silently dropped (DESIGN §4)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from attrs import frozen

from ledger.log import codec
from ledger.log.chain import Log
from ledger.log.integrity import Finding, Integrity
from ledger.schema.events import LedgerRepaired, NewlineRestored

QUARANTINE_SUFFIX = ".quarantine-"


@frozen
class Quarantined:
    """A quarantine file beside a ledger: its name, size and sha256 digest."""

    name: str
    byte_count: int
    digest: str


@frozen
class TornCut:
    """Torn bytes to move to the quarantine file `name` (`kept`: already there)."""

    name: str
    data: bytes
    kept: bool
    # Nothing to cut: the last line verified and only its newline is written back.
    newline_only: bool = False


# The repair events to write before a batch, and the torn bytes to move to quarantine.
Repairs = tuple[list[LedgerRepaired | NewlineRestored], TornCut | None]


class Cutter(Protocol):
    """The two primitives a repair needs from a store's locked session."""

    def quarantine(self, name: str, torn: bytes) -> None: ...

    def truncate(self, size: int) -> None: ...


def quarantined(name: str, data: bytes) -> Quarantined:
    """What a quarantine file named `name` holding `data` is."""
    return Quarantined(name=name, byte_count=len(data), digest=codec.digest(data))


def plan_repairs(
    ledger_name: str,
    names: Sequence[str],
    read: Callable[[str], bytes],
    data: bytes,
    log: Log,
) -> Repairs:
    """The repair events to write before the command's batch (a torn tail is kept, recorded,
    never silently dropped), and the torn bytes to move to quarantine."""
    unrecorded = [quarantined(name, read(name)) for name in _unrecorded(names, log)]
    # A quarantine whose repair event never became durable (a crash right after the
    # tail was cut) is recorded now, at the line where the ledger then ended.
    repairs: list[LedgerRepaired | NewlineRestored] = [
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
    if log.torn.newline_only:  # an acknowledged event stays: only its newline is restored
        repairs.append(NewlineRestored(line=log.torn.line, event=log.events[-1].id))
        return repairs, TornCut(name="", data=b"", kept=False, newline_only=True)
    torn = data[log.torn.offset :]
    digest = codec.digest(torn)
    # A crash after these bytes were kept but before they were cut: reuse that copy.
    kept = next((q for q in unrecorded if q.digest == digest), None)
    if kept is not None:
        repairs = [
            r for r in repairs if not (isinstance(r, LedgerRepaired) and r.quarantine == kept.name)
        ]
    name = kept.name if kept is not None else next_quarantine_name(ledger_name, names)
    repairs.append(
        LedgerRepaired(quarantine=name, line=log.torn.line, byte_count=len(torn), digest=digest)
    )
    return repairs, TornCut(name=name, data=torn, kept=kept is not None)


def cut_torn_tail(session: Cutter, torn: TornCut, size: int) -> bytes:
    """Keep the torn bytes in quarantine (fsynced), then cut the ledger back to `size`;
    return the bytes to write before the next batch (the newline of a line that verified)."""
    if torn.newline_only:
        return b"\n"
    # In this order a crash in between leaves a copy that the next append reuses: never a
    # loss, and never bytes that the next batch would be glued onto.
    if not torn.kept:
        session.quarantine(torn.name, torn.data)
    session.truncate(size)
    return b""


def next_quarantine_name(ledger_name: str, names: Sequence[str]) -> str:
    """The next free numbered quarantine file name beside the ledger."""
    base = ledger_name.rpartition("/")[2]
    number = max((quarantine_number(name) for name in names), default=0) + 1
    return f"{base}{QUARANTINE_SUFFIX}{number}"


def quarantine_number(name: str) -> int:
    """The number a quarantine file's name ends with (0 if none): the files' order."""
    suffix = name.rpartition(QUARANTINE_SUFFIX)[2]
    return int(suffix) if suffix.isdigit() else 0


def _unrecorded(names: Sequence[str], log: Log) -> list[str]:
    """The quarantine files that no ledger.repaired event of the log names."""
    if not names:
        return []
    recorded = log.repaired()
    return [name for name in names if name not in recorded]


def quarantine_findings(present: Sequence[Quarantined], integrity: Integrity) -> list[Finding]:
    """Quarantine files no repair event accounts for, or that differ from what it recorded."""
    recorded = {
        event.data.get("quarantine"): (line, event)
        for line, event in zip(integrity.event_lines, integrity.events, strict=True)
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
