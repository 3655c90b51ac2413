"""Which combinations of merged branches' steps break a rule (DESIGN §8): the conflicts of a
replayed state, and the resolutions each accepts.

A merged ledger interleaves two branches' batches, so replay passes moments no branch saw;
only outcomes that still compete at the end are conflicts: two attempts or points still open,
two bests, relaxations of one limit that end apart, steps after a stop or behind a later
stage. Replay keeps the facts (`State.merge`, the pending attempts, the open points, the
relaxation tips); this module reads them. A conflict stays until a `conflict.resolved` event
names its id; the same parties in conflict again count as resolved (a person already decided
how they stand).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ledger.domain.state import State
from ledger.schema.conflicts import Conflict, ConflictKind
from ledger.schema.events import BASE_SKILLS, STAGES, TUNE_SKILLS
from ledger.schema.vocabulary import ADOPTED, MAX_BASE_SKILLS, MAX_TUNE_SKILLS

KEEP = "keep"
FASTER = "faster"
STRICTER = "stricter"
REMEASURE = "remeasure"
BASELINE = "baseline"  # the party of a `bests` conflict that is the target sheet's baseline

# The rule each kind breaks, as the protocol says it (DESIGN §8's table).
RULES: Mapping[ConflictKind, str] = {
    "attempts-pending": "R6: one change at a time",
    "after-stop": "R10: nothing is tuned after a stop",
    "pending-at-stop": "R10: nothing is tuned after a stop",
    "bests": "R8: one best",
    "remeasure": "R8: one best, measured again",
    "points-open": "R7: one point at a time",
    "point-reopened": "R7: a point is opened once",
    "stages-apart": "R4: stages only go forward",
    "stage-order": "R4: stages in order",
    "limits-apart": "R3: one limit in force",
    "skill-budget": "R2: the skill budget",
    "sheet-after-adopt": "R3: the target sheet comes before tuning",
    "finished-twice": "R6: an attempt finishes once",
}


def conflicts(state: State) -> tuple[Conflict, ...]:
    """The protocol conflicts merged branches left in `state` that no resolution names, in
    the order of the rules."""
    found = (
        *_skill_budget(state),
        *_limits_apart(state),
        *(Conflict("sheet-after-adopt", (sheet,)) for sheet in state.merge.sheets_after_adopt),
        *_stage_order(state),
        *(Conflict("stages-apart", pair) for pair in state.merge.steps_behind),
        *_attempts_pending(state),
        *(Conflict("finished-twice", fact) for fact in state.merge.finished_twice),
        *_points_open(state),
        *(Conflict("point-reopened", (point,)) for point in state.merge.reopened_points),
        *_bests(state),
        *([Conflict(REMEASURE, tuple(state.remeasure))] if state.remeasure else []),
        *_after_stop(state),
    )
    resolved = state.merge.resolved
    return tuple(c for c in dict.fromkeys(found) if c.id not in resolved)


def _skill_budget(state: State) -> list[Conflict]:
    """R2: merged branches that each loaded a skill may hold more than the budget."""
    base = [s for s in state.skills if s in BASE_SKILLS]
    tune = [s for s in state.skills if s in TUNE_SKILLS]
    if len(base) > MAX_BASE_SKILLS or len(tune) > MAX_TUNE_SKILLS:
        return [Conflict("skill-budget", tuple(state.skills))]
    return []


def _limits_apart(state: State) -> Iterator[Conflict]:
    """R3: relaxations of one limit that no later one supersedes, ending at different limits
    (each decided against its own branch's limit): one party per limit, in order."""
    for tips in state.relaxation_tips.values():
        if len(tips) < 2:
            continue
        limits = {r.event: r.limit for r in state.relaxations if r.event in tips}
        parties: dict[str, str] = {}
        for tip in tips:
            parties.setdefault(json.dumps(limits[tip], sort_keys=True), tip[:12])
        if len(parties) > 1:
            yield Conflict("limits-apart", tuple(parties.values()))


def _stage_order(state: State) -> Iterator[Conflict]:
    """R4: a stage entered before the one the order expects (only merges skip one)."""
    for stage, expected in zip(state.entered, STAGES, strict=False):
        if stage != expected:
            yield Conflict("stage-order", (stage, expected))


def _attempts_pending(state: State) -> list[Conflict]:
    """R6: the latest two attempts still pending, when two branches each left one."""
    if state.pending_count < 2:
        return []
    pending = [a.id for a in state.attempts.values() if a.status == "pending"]
    return [Conflict("attempts-pending", (pending[-2], pending[-1]))]


def _points_open(state: State) -> list[Conflict]:
    """R7: the latest two points still open, when two branches each opened one."""
    if state.open_points < 2:
        return []
    still_open = [p.name for p in state.points.values() if p.is_open]
    return [Conflict("points-open", (still_open[-2], still_open[-1]))]


def _bests(state: State) -> list[Conflict]:
    """R8: an adoption against a best that is not the one replay held (two branches each
    adopted one). A later adoption on either branch, against one of the two, carries the
    conflict forward, so it names the two bests that compete now."""
    adoptions = state.merge.adoptions
    # Before the first adoption against a best replay did not hold nothing competes (on one
    # branch, none ever is): the loop below starts there.
    start = next((i for i, a in enumerate(adoptions) if a.against != a.held), len(adoptions))
    resolved = state.merge.resolved
    competing: list[Conflict] = []
    for adoption in adoptions[start:]:
        competing = [c for c in competing if c.id not in resolved]
        carried = next((c for c in competing if adoption.against in c.parties), None)
        if carried is not None:
            first, second = carried.parties
            rival = second if adoption.against == first else first
            competing.remove(carried)
            competing.append(Conflict("bests", (adoption.attempt, rival)))
        elif adoption.against != adoption.held:
            competing.append(Conflict("bests", (adoption.attempt, adoption.held or BASELINE)))
    return competing


def _after_stop(state: State) -> Iterator[Conflict]:
    """R10: an attempt started after the stop, or pending on another branch when it came
    (until abandoned: on one branch the stop abandons it in its own batch)."""
    for attempt, _reason in state.merge.started_after_stop:
        yield Conflict("after-stop", (attempt,))
    for attempt, _reason in state.merge.pending_at_stop:
        if state.attempts[attempt].status != "abandoned":
            yield Conflict("pending-at-stop", (attempt,))


# --- resolutions ---------------------------------------------------------------------------


def options(state: State, conflict: Conflict) -> tuple[str, ...]:
    """The resolutions that resolve `conflict` in `state`, in the order to offer them."""
    kind, parties = conflict.kind, conflict.parties
    if kind == "attempts-pending":
        pending = [a for a in parties if _is_pending(state, a)]
        return (*(f"abandon:{a}" for a in pending), *([KEEP] if len(pending) <= 1 else []))
    if kind in ("after-stop", "pending-at-stop"):
        return (f"abandon:{parties[0]}",) if _is_pending(state, parties[0]) else (KEEP,)
    if kind == "bests":
        adopted = [a for a in parties if _is_adopted(state, a)]
        if len(adopted) < 2:  # the baseline against an adopted best
            return (*(f"best:{a}" for a in adopted), KEEP)
        # Algorithm changes differ in code, not config: a candidate cannot measure them again.
        configs = all(state.attempts[a].kind != "algorithm" for a in adopted)
        return (FASTER, *([REMEASURE] if configs else []), *(f"best:{a}" for a in adopted))
    if kind == "limits-apart":
        parties = tuple(p for p in parties if _relaxation(state, p) is not None)
        stricter = [STRICTER] if stricter_of(state, parties) else []
        return (*stricter, *(f"limit:{r}" for r in parties))
    if kind == REMEASURE:
        return ()  # closes by itself when both are measured again (stages/remeasure.py)
    if kind == "points-open":
        still_open = [p for p in parties if p in state.points and state.points[p].is_open]
        return (*(f"close:{p}" for p in still_open), *([KEEP] if len(still_open) <= 1 else []))
    return (KEEP,)


def faster_of(state: State, conflict: Conflict) -> str:
    """The adopted attempt of a `bests` conflict with the lower recorded median time (the
    lower id on a tie)."""
    timed = []
    for attempt in conflict.parties:
        measurement = state.attempts[attempt].measurement
        assert measurement is not None  # FASTER is offered only when both are adopted
        timed.append((measurement.median_us, attempt))
    return min(timed)[1]


def stricter_of(state: State, relaxations: Sequence[str]) -> str | None:
    """The relaxation whose limit is nowhere above any other's, if there is one."""
    limits = [(r, _relaxation(state, r)) for r in relaxations]
    return next(
        (
            relaxation
            for relaxation, limit in limits
            if len(limits) > 1 and all(_at_most(limit, other) for _r, other in limits)
        ),
        None,
    )


def _relaxation(state: State, relaxation: str) -> Any:
    """The limit of the relaxation whose event id starts with `relaxation`; None if none."""
    return next((r.limit for r in state.relaxations if r.event.startswith(relaxation)), None)


def _at_most(limit: Any, other: Any) -> bool:
    """True when `limit` is nowhere above `other` (an int, or nested lists of ints, R3)."""
    if isinstance(limit, list) and isinstance(other, list):
        return len(limit) == len(other) and all(map(_at_most, limit, other))
    return isinstance(limit, int) and isinstance(other, int) and limit <= other


def _is_pending(state: State, attempt: str) -> bool:
    found = state.attempts.get(attempt)
    return found is not None and found.status == "pending"


def _is_adopted(state: State, attempt: str) -> bool:
    found = state.attempts.get(attempt)
    return found is not None and found.verdict in ADOPTED and found.measurement is not None
