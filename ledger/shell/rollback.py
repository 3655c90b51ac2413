"""Rollback detection: a ledger that lost the event MEMORY.md was rendered from is not written.

MEMORY.md is committed beside the ledger, and its header records the position it was rendered
from (`ledger.log.position.Position`: events and the last one's id). When the ledger no longer
holds that event, it was replaced by an older copy or truncated behind MEMORY.md's back, and the
next append would re-render MEMORY.md and erase the only trace, with the failed attempts (and
their R9 refusals) gone (issue 20, item 3). Writing is then refused (exit 7) until a person
records `accept-rollback`; reads go on.

After `git checkout` of an older commit MEMORY.md is older too, so the two agree.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from attrs import frozen

from ledger.errors import BadInput, LedgerDamaged
from ledger.log import safe_files
from ledger.log.position import Position
from ledger.schema.events import RollbackAccepted

# MEMORY.md's header is parsed (ledger.projections.memory_file, which imports the splice and
# its formatting) only where a rollback is looked for: `priors` imports this module through
# the API and never looks.
if TYPE_CHECKING:
    from ledger.domain.state import State
    from ledger.log.store_interface import Store
    from stages.outcome import Decision
    from stages.refusal import Refusal

# How much of MEMORY.md is read first to find its header (a fresh template puts it at the top).
_HEAD_BYTES = 4096

# The commands that only read: still allowed while writing is refused.
READS = ("status", "resume", "log", "audit", "check")


@frozen
class Rollback:
    """What MEMORY.md was rendered from, which the ledger lost, and where the ledger ends now."""

    memory: Position
    ledger: Position


@frozen
class AcceptRollback:
    """Accept that the ledger lost `missing`, the last event MEMORY.md was rendered from."""

    missing: str
    events: int
    reason: str
    person: str | None = None


def find(store: Store, memory_path: Path, state: State) -> Rollback | None:
    """The rollback behind MEMORY.md's back that `state`'s ledger shows, or None."""
    recorded = _recorded(memory_path, state.op)
    # Equal to the ledger's last event is the common case: it costs no read of the ledger.
    if recorded is None or not recorded.last or recorded.last == state.last_event:
        return None
    if recorded.last in state.rollbacks_accepted:  # accepted; MEMORY.md not re-rendered yet
        return None
    if holds(store.read_bytes(), recorded.last):  # MEMORY.md is merely stale
        return None
    return Rollback(memory=recorded, ledger=state.position)


def holds(data: bytes, event_id: str) -> bool:
    """True when the ledger's bytes hold a line of the event `event_id`."""
    # Every canonical line starts with its id (`"id"` sorts first, DESIGN §4.2); anchoring the
    # search at a line start keeps an id named as a parent from counting.
    start = b'{"id":"' + event_id.encode("ascii") + b'"'
    return data.startswith(start) or b"\n" + start in data


def refuse_unaccepted(
    store: Store, memory_path: Path, state: State, op: str, command: object = None
) -> None:
    """Raise LedgerDamaged (exit 7) when the ledger lost MEMORY.md's last event, unless
    `command` is the acceptance of exactly that loss."""
    found = find(store, memory_path, state)
    if found is None:
        return
    if isinstance(command, AcceptRollback) and command.missing == found.memory.last:
        return
    raise damaged(found, store.name, op)


def damaged(found: Rollback, ledger_name: str, op: str) -> LedgerDamaged:
    """The refusal of a write to a rolled-back ledger, naming both last events."""
    return LedgerDamaged(
        f"{ledger_name}: {describe(found)}; writing is refused, since re-rendering MEMORY.md "
        "would erase the only trace of the lost events",
        blocking=f"MEMORY.md's last event {found.memory.last} is not in the ledger",
        allowed=(*READS, "accept-rollback"),
        hint=f"restore events.jsonl (from git or a backup) so that it holds "
        f"{found.memory.last}; or, if the older ledger is the right one, run "
        f"`tune-ledger accept-rollback {op} --person NAME --reason TEXT`",
        details={
            "memory_last": found.memory.last,
            "memory_events": found.memory.events,
            "ledger_last": found.ledger.last or None,
            "ledger_events": found.ledger.events,
        },
    )


def describe(found: Rollback) -> str:
    """One sentence naming MEMORY.md's last event and the ledger's."""
    return (
        f"the ledger was rolled back or truncated: MEMORY.md was rendered from "
        f"{found.memory.events} events, last {found.memory.last}, which the ledger no longer "
        f"holds; the ledger has {found.ledger.events} events, last {found.ledger.last or '-'}"
    )


def warning(found: Rollback, op: str) -> str:
    """The warning a read command prints while a rollback is not accepted."""
    return (
        f"{describe(found)}; writing is refused until it is restored or "
        f"`tune-ledger accept-rollback {op} --person NAME --reason TEXT` is run"
    )


def acceptance(
    found: Rollback | None, op: str, reason: str, person: str | None = None
) -> AcceptRollback:
    """The command accepting `found`; BadInput when there is no rollback to accept."""
    if found is None:
        raise BadInput(
            f"op {op!r}: no rollback to accept: the ledger holds the last event MEMORY.md "
            "was rendered from",
            hint=f"nothing to do; `tune-ledger check {op}` reports a stale MEMORY.md",
        )
    return AcceptRollback(
        missing=found.memory.last, events=found.memory.events, reason=reason, person=person
    )


def decide(state: State, command: AcceptRollback) -> Decision | Refusal:
    """Record the acceptance; outside the protocol's steps, so no gate of `stages` applies.
    A person's decision (DESIGN §3.3): refused without a person's name."""
    from stages.outcome import accept, build
    from stages.person import person_name, person_refusal

    person = person_name(command.person)
    if person is None:
        return person_refusal("rollback", "accept-rollback", ["accept-rollback", state.op or "OP"])
    return accept(
        build(
            RollbackAccepted,
            "rollback acceptance",
            missing=command.missing,
            events=command.events,
            reason=command.reason,
            person=person,
        )
    )


def _recorded(memory_path: Path, op: str | None) -> Position | None:
    """The position MEMORY.md records for `op`; None when there is no such evidence."""
    try:
        found = _header_position(memory_path)
    except (OSError, BadInput):
        # No MEMORY.md (or none readable: a folder, a FIFO, too large) is no evidence; the
        # commands that render or check it report its problems themselves.
        return None
    if found is None:
        return None
    recorded_op, position = found
    # A header of another op (a copied file) says nothing about this op's ledger.
    return position if op is None or recorded_op == op else None


def _header_position(memory_path: Path) -> tuple[str, Position] | None:
    # Runs before every append: reading and decoding a whole MEMORY.md cost ~80 µs at 24 KiB,
    # and the header sits near the top, so its head is read first. The header is ASCII, so a
    # character cut at the chunk's end (replaced) cannot change what is found.
    from ledger.projections import memory_file

    fd = safe_files.open_regular(memory_path)  # never through a link, never a FIFO
    try:
        head = os.read(fd, _HEAD_BYTES)
        found = memory_file.recorded_position(head.decode("utf-8", "replace"))
        if found is not None or len(head) < _HEAD_BYTES:
            return found
        whole = safe_files.read_descriptor(fd, memory_path, safe_files.TEXT_BYTES)
    finally:
        os.close(fd)
    return memory_file.recorded_position(whole.decode("utf-8", "replace"))
