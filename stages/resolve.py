"""Resolving a protocol conflict of merged branches (`tune-ledger resolve`, DESIGN §8).

A conflict (stages/conflicts.py) stays, shown by `status`, `audit` and `conflicts`, and
fails `check`, until a `conflict.resolved` event names it. A resolution is one of:

- `abandon:<attempt>`: abandon a pending attempt the conflict names (two attempts pending at
  once, R6; an attempt started after the campaign stopped, or pending when it stopped, R10).
  Records attempt.abandoned.
- `best:<attempt>`: choose which of two bests adopted on two branches is the best (R8).
  Replay makes it the best. `faster` is recorded as `best:` the one whose recorded median is
  lower (the lower id on a tie), so audit re-decides it like any choice.
- `remeasure`: measure both bests' configs again (R8). Records only conflict.resolved; replay
  puts back the best both branches last shared, and the conflict "to be re-measured" that
  follows says what to run (stages/remeasure.py); it closes by itself.
- `close:<point>`: close a point the conflict names (two points open at once, R7). Records
  point.closed.
- `limit:<relaxation>`: choose which of two branches' relaxations of one tile limit is in force
  (R3; ours or theirs). `stricter` is recorded as `limit:` the lower limit (offered when one
  is lower on every axis).
- `keep`: the merged state stands as it is: steps recorded after a stop stay history and the
  campaign stays stopped; of two stages in progress the later stays current. Refused while
  it would leave the state breaking a rule (two attempts or two points still open, an
  attempt pending after a stop) or choose arbitrarily (two bests).

The batch is the consistency events, then the conflict.resolved event; audit re-decides it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from attrs import frozen

from ledger.domain.hints import TEXT, Step, arg
from ledger.domain.state import State
from ledger.errors import BadInput, LedgerError
from ledger.log import codec
from ledger.log.record import Event, unstructure_payload
from ledger.schema.conflicts import Conflict
from ledger.schema.events import AttemptAbandoned, ConflictResolved, Payload, PointClosed, Stage
from stages.conflicts import FASTER, STRICTER, conflicts, faster_of, options, stricter_of
from stages.outcome import Decision


@frozen
class Resolve:
    """Resolve one open conflict, named by its id or its number, with one resolution."""

    conflict: str
    resolution: str
    reason: str


def find_conflict(state: State, reference: str) -> Conflict:
    """The open conflict `reference` names: its id, or its number (1-based) in the order
    `conflicts` gives; BadInput otherwise."""
    found = conflicts(state)
    if not found:
        raise BadInput("there is no conflict to resolve", hint=str(Step("status", state.op)))
    by_id = next((c for c in found if c.id == reference), None)
    if by_id is not None:
        return by_id
    if reference.isdigit() and 1 <= int(reference) <= len(found):
        return found[int(reference) - 1]
    listing = "; ".join(f"{n}: {c.id}" for n, c in enumerate(found, start=1))
    raise BadInput(
        f"{arg('conflict')} {reference!r} names no open conflict",
        hint=f"name one by its id or number ({Step('conflicts', state.op)}): {listing}",
    )


def decide(state: State, command: Resolve) -> list[Payload]:
    """The events that resolve the conflict as asked; BadInput when it cannot be resolved so."""
    conflict = find_conflict(state, command.conflict)
    reason = command.reason.strip()
    if not reason:
        raise BadInput("the reason must not be empty", hint=f"give {arg('reason', TEXT)}")
    offered = options(state, conflict)
    if command.resolution not in offered:
        raise BadInput(
            f"{command.resolution!r} does not resolve conflict {conflict.id}",
            hint=f"resolve it with one of: {', '.join(offered)}",
            details={"conflict": conflict.id, "options": list(offered)},
        )
    resolution = command.resolution
    if resolution == FASTER:
        resolution = f"best:{faster_of(state, conflict)}"
    elif resolution == STRICTER:
        resolution = f"limit:{stricter_of(state, conflict.parties)}"
    kind, _, target = resolution.partition(":")
    events: list[Payload] = []
    if kind == "abandon":
        events.append(AttemptAbandoned(attempt=target, reason=f"merge conflict: {reason}"))
    elif kind == "close":
        point = state.points[target]
        events.append(
            PointClosed(
                stage=cast(Stage, point.stage),
                name=point.name,
                outcome="closed",
                reason=f"merge conflict: {reason}",
            )
        )
    events.append(ConflictResolved(conflict=conflict, resolution=resolution, reason=reason))
    return events


def decision(state: State, command: Resolve) -> Decision:
    """The decider the shell runs a resolution with (`OpLedger.execute(..., decider=)`), so a
    resolution appends like every step: lock, retry, render."""
    return Decision(events=tuple(decide(state, command)))


def is_resolution(batch: Sequence[Event]) -> bool:
    """True when `batch` was appended by `resolve` (it ends with conflict.resolved)."""
    return batch[-1].type == ConflictResolved.TYPE


def resolution_findings(state: State, batch: Sequence[Event]) -> list[str]:
    """Audit a resolution batch: the conflict was open and the events are the ones it gives."""
    data = batch[-1].data
    try:
        recorded = data["conflict"]
        reference = Conflict(kind=recorded["kind"], parties=recorded["parties"]).id
    except (KeyError, TypeError, ValueError) as e:
        return [f"the resolution names no conflict: {e!r}"]
    command = Resolve(
        conflict=reference, resolution=str(data.get("resolution")), reason=str(data.get("reason"))
    )
    try:
        expected = decide(state, command)
    except LedgerError as e:
        return [f"the resolution is not valid here: {e.message}"]
    given = [(e.type, e.data) for e in batch]
    # Recorded data went through JSON: compare like with like (tuples become lists).
    wanted = [(p.TYPE, codec.loads(codec.canonical_json(unstructure_payload(p)))) for p in expected]
    if given != wanted:
        return [
            f"recorded {[t for t, _ in given]} but resolving conflict {reference} with "
            f"{command.resolution!r} gives {[t for t, _ in wanted]}"
        ]
    return []
