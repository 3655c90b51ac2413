"""Resolving the protocol conflicts that merged branches leave in the replayed state.

Replay records a conflict (`state.conflicts`) when events of two branches break a rule
together; it stays, shown by `status`, `audit` and `conflicts`, and fails `check`, until a
`conflict.resolved` event names it. A resolution is one of:

- `abandon:<attempt>`: abandon a pending attempt the conflict names (two attempts pending at
  once, R6; an attempt started after the campaign stopped, or pending when it stopped, R10).
  Records attempt.abandoned.
- `best:<attempt>`: choose which of two bests adopted on two branches is the best (R8).
  Replay makes it the best. `faster` is recorded as `best:` the one whose recorded median is
  lower (the lower id on a tie), so audit re-decides it like any choice.
- `remeasure`: measure both bests' configs again (R8). Records only conflict.resolved; replay
  puts back the best both branches last shared and replaces the conflict by "bests A and B to
  be re-measured", which `check` and the merge gate explain with the commands to run
  (`stages/remeasure.py`) and which closes by itself when both have a fresh verdict.
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

import json
import re
from collections.abc import Sequence
from typing import Any, cast

from attrs import frozen

from ledger.domain import fold_conflicts as known
from ledger.domain.state import State
from ledger.errors import BadInput, LedgerError
from ledger.log import codec
from ledger.log.record import Event, unstructure_payload
from ledger.schema.events import AttemptAbandoned, ConflictResolved, Payload, PointClosed, Stage
from stages import remeasure
from stages.outcome import Decision

KEEP = "keep"
FASTER = "faster"
STRICTER = "stricter"
REMEASURE = "remeasure"
_ADOPTED = ("adopt", "target-reached")


@frozen
class Resolve:
    """Resolve one recorded conflict with one resolution, for a reason."""

    conflict: str
    resolution: str
    reason: str


def options(state: State, conflict: str) -> tuple[str, ...]:
    """The resolutions that resolve `conflict` in `state`, in the order to offer them."""
    if match := known.PENDING.fullmatch(conflict):
        pending = [a for a in match.groups() if _is_pending(state, a)]
        return (*(f"abandon:{a}" for a in pending), *([KEEP] if len(pending) <= 1 else []))
    if match := known.AFTER_STOP.fullmatch(conflict) or known.PENDING_AT_STOP.fullmatch(conflict):
        attempt = match.group("a")
        return (f"abandon:{attempt}",) if _is_pending(state, attempt) else (KEEP,)
    if match := known.TWO_BESTS.fullmatch(conflict):
        adopted = [a for a in match.groups() if _is_adopted(state, a)]
        if len(adopted) < 2:  # the baseline against an adopted best (not one of ours today)
            return (*(f"best:{a}" for a in adopted), KEEP)
        # Algorithm changes differ in code, not config: a candidate cannot measure them again.
        configs = all(state.attempts[a].kind != "algorithm" for a in adopted)
        return (FASTER, *([REMEASURE] if configs else []), *(f"best:{a}" for a in adopted))
    if match := known.RELAXED.fullmatch(conflict):
        parties = _relaxed_parties(state, match)
        stricter = [STRICTER] if _stricter(parties) else []
        return (*stricter, *(f"limit:{r}" for r, _limit in parties))
    if known.REMEASURE.fullmatch(conflict):
        return ()  # closes by itself when both are measured again (`next_step` says how)
    if match := known.POINTS.fullmatch(conflict):
        still_open = [p for p in match.groups() if p in state.points and state.points[p].is_open]
        return (*(f"close:{p}" for p in still_open), *([KEEP] if len(still_open) <= 1 else []))
    return (KEEP,)


def _is_pending(state: State, attempt: str) -> bool:
    found = state.attempts.get(attempt)
    return found is not None and found.status == "pending"


def _is_adopted(state: State, attempt: str) -> bool:
    found = state.attempts.get(attempt)
    return found is not None and found.verdict in _ADOPTED and found.measurement is not None


def _faster(state: State, conflict: str) -> str:
    """`best:` the adopted attempt of `conflict` with the lower recorded median time."""
    match = known.TWO_BESTS.fullmatch(conflict)
    assert match is not None  # FASTER is offered only for two adopted bests
    timed = []
    for attempt in match.groups():
        measurement = state.attempts[attempt].measurement
        assert measurement is not None  # _is_adopted checked it
        timed.append((measurement.median_us, attempt))
    return f"best:{min(timed)[1]}"


def _relaxed_parties(state: State, match: re.Match[str]) -> list[tuple[str, Any]]:
    """The relaxations a two-relaxations conflict names that the ledger holds, with limits."""
    found = []
    for party in known.RELAXED_PARTY.finditer(match["parties"]):
        relaxation = party["relaxation"]
        if any(r.event.startswith(relaxation) for r in state.relaxations):
            found.append((relaxation, json.loads(party["limit"])))
    return found


def _stricter(parties: Sequence[tuple[str, Any]]) -> str | None:
    """The relaxation whose limit is nowhere above any other's, if there is one."""
    return next(
        (
            relaxation
            for relaxation, limit in parties
            if len(parties) > 1 and all(_at_most(limit, other) for _r, other in parties)
        ),
        None,
    )


def _at_most(limit: Any, other: Any) -> bool:
    """True when `limit` is nowhere above `other` (an int, or nested lists of ints, R3)."""
    if isinstance(limit, list) and isinstance(other, list):
        return len(limit) == len(other) and all(map(_at_most, limit, other))
    return isinstance(limit, int) and isinstance(other, int) and limit <= other


def find_conflict(state: State, text: str) -> str:
    """The recorded conflict `text` names: its exact text, its number (1-based), or a unique
    part of it; BadInput otherwise."""
    conflicts = state.conflicts
    if not conflicts:
        raise BadInput("there is no conflict to resolve", hint="tune-ledger status OP")
    if text in conflicts:
        return text
    if text.isdigit() and 1 <= int(text) <= len(conflicts):
        return conflicts[int(text) - 1]
    matches = [c for c in conflicts if text and text in c]
    if len(matches) == 1:
        return matches[0]
    listing = "; ".join(f"{n}: {c}" for n, c in enumerate(conflicts, start=1))
    what = "matches several conflicts" if matches else "names no recorded conflict"
    raise BadInput(f"--conflict {text!r} {what}", hint=f"the conflicts are: {listing}")


def decide(state: State, command: Resolve) -> list[Payload]:
    """The events that resolve the conflict as asked; BadInput when it cannot be resolved so."""
    conflict = find_conflict(state, command.conflict)
    reason = command.reason.strip()
    if not reason:
        raise BadInput("the reason must not be empty", hint="--reason TEXT")
    offered = options(state, conflict)
    if command.resolution not in offered:
        raise BadInput(
            f"{command.resolution!r} does not resolve {conflict!r}",
            hint=f"resolve it with one of: {', '.join(offered)}",
            details={"conflict": conflict, "options": list(offered)},
        )
    resolution = command.resolution
    if resolution == FASTER:
        resolution = _faster(state, conflict)
    elif resolution == STRICTER:
        match = known.RELAXED.fullmatch(conflict)
        assert match is not None  # STRICTER is offered only for relaxations apart
        resolution = f"limit:{_stricter(_relaxed_parties(state, match))}"
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


def is_resolution(batch: Sequence[Event]) -> bool:
    """True when `batch` was appended by `resolve` (it ends with conflict.resolved)."""
    return batch[-1].type == ConflictResolved.TYPE


def resolution_findings(state: State, batch: Sequence[Event]) -> list[str]:
    """Audit a resolution batch: the conflict existed and the events are the ones it gives."""
    data = batch[-1].data
    command = Resolve(
        conflict=str(data.get("conflict")),
        resolution=str(data.get("resolution")),
        reason=str(data.get("reason")),
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
            f"recorded {[t for t, _ in given]} but resolving {command.conflict!r} with "
            f"{command.resolution!r} gives {[t for t, _ in wanted]}"
        ]
    return []


def conflict_findings(state: State, op: str) -> list[str]:
    """One finding per unresolved conflict, with the command that resolves it (for check)."""
    return [
        f"unresolved merge conflict: {conflict}; {_how(conflict)}: {command(op, number, state)}"
        for number, conflict in enumerate(state.conflicts, start=1)
    ]


def _how(conflict: str) -> str:
    return "to close it" if known.REMEASURE.fullmatch(conflict) else "resolve it"


def command(op: str, number: int, state: State) -> str:
    """The command line that resolves conflict `number` (1-based), with its resolutions; for
    two bests being re-measured, the commands that measure them."""
    conflict = state.conflicts[number - 1]
    if known.REMEASURE.fullmatch(conflict):
        return remeasure.next_step(state) or f"tune-ledger status {op}"
    offered = options(state, conflict)
    return (
        f"tune-ledger resolve {op} --conflict {number} --resolution RESOLUTION --reason "
        f"TEXT, RESOLUTION one of: {', '.join(offered)}"
    )


def listing(state: State) -> list[dict[str, Any]]:
    """The unresolved conflicts with their numbers and resolutions (the `conflicts` view)."""
    return [
        {
            "number": number,
            "conflict": conflict,
            "options": list(options(state, conflict)),
            "next": command(str(state.op), number, state),
        }
        for number, conflict in enumerate(state.conflicts, start=1)
    ]


def decision(state: State, command: Resolve) -> Decision:
    """The decider the shell runs a resolution with (`OpLedger.execute(..., decider=)`), so a
    resolution appends like every step: lock, retry, render."""
    return Decision(events=tuple(decide(state, command)))
