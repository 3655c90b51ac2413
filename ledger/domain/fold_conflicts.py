"""Protocol conflicts of merged branches: which combinations replay records, their texts, and
when they stop competing (DESIGN §8).

A merged ledger interleaves the batches of two branches in canonical order, so replay passes
through moments no branch ever saw (two attempts started, neither finished yet). Only outcomes
that still compete are conflicts: two attempts or points both still open, two adopted bests,
steps after a stop, two branches in different stages. A conflict
whose cause is gone by the end of the interleaving (each branch finished its attempt) is
dropped by the fold itself, so nobody has to resolve what does not exist.

The texts are the conflicts' identity: `conflict.resolved` names one by its text, and
ledger/git/resolve.py reads the parties back with the patterns below (their one home).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ledger.domain.keys import measured_key
from ledger.domain.state import Attempt, Best, State
from ledger.schema.events import STAGES

PENDING = re.compile(r"attempts (?P<a>\S+) and (?P<b>\S+) pending at once")
AFTER_STOP = re.compile(r"attempt (?P<a>\S+) started after the campaign stopped \(.*\)")
PENDING_AT_STOP = re.compile(
    r"attempt (?P<a>\S+) was pending on another branch when the campaign stopped \(.*\)"
)
TWO_BESTS = re.compile(
    r"attempt (?P<a>\S+) was adopted against best \S+ while attempt "
    r"(?P<b>\S+) was the best \(adopted on another branch\)"
)
REMEASURE = re.compile(r"bests (?P<a>\S+) and (?P<b>\S+) to be re-measured")
POINTS = re.compile(r"points (?P<a>.+) and (?P<b>.+) open at once")
STAGES_APART = re.compile(r"stages (?P<a>\S+) and (?P<b>\S+) in progress on two branches")
RELAXED = re.compile(r"(?P<what>vec|cube) limit relaxed apart on merged branches: (?P<parties>.+)")
RELAXED_PARTY = re.compile(r"(?P<limit>\S+) by (?P<relaxation>[0-9a-f]{12})")


# --- R6: attempts pending at once ----------------------------------------------------------------


def attempt_started(state: State, attempt: str) -> None:
    """Record two attempts pending at once (R6) and an attempt started after a stop (R10)."""
    if state.pending is not None:
        state.record_conflict(f"attempts {state.pending} and {attempt} pending at once")
    if state.stopped is not None:
        state.record_conflict(
            f"attempt {attempt} started after the campaign stopped ({state.stopped})"
        )


def attempt_finished(state: State, attempt: str, status: str) -> None:
    """Re-derive the pending-at-once conflicts after an attempt finished: two branches that
    each finished their attempt leave none, three that left two pending leave one (R6). An
    attempt abandoned no longer goes on after a stop (R10: a user stop abandons the pending
    attempt in its own batch, right after the stop event). A re-measurement that finished may
    close "to be re-measured" (R8)."""
    if state.remeasure:
        remeasure_finished(state, attempt, status)
    if status == "abandoned":
        state.conflicts[:] = [
            c
            for c in state.conflicts
            if not ((m := PENDING_AT_STOP.fullmatch(c)) and m.group("a") == attempt)
        ]
    if not any(PENDING.fullmatch(c) for c in state.conflicts):
        return
    state.conflicts[:] = [c for c in state.conflicts if not PENDING.fullmatch(c)]
    pending = [a.id for a in state.attempts.values() if a.status == "pending"]
    if len(pending) >= 2:
        state.record_conflict(f"attempts {pending[-2]} and {pending[-1]} pending at once")


# --- R7: points open at once ---------------------------------------------------------------------


def point_closed(state: State) -> None:
    """Re-derive the open-at-once conflicts after a point closed (R7), as for attempts."""
    if not any(POINTS.fullmatch(c) for c in state.conflicts):
        return
    state.conflicts[:] = [c for c in state.conflicts if not POINTS.fullmatch(c)]
    still_open = [p.name for p in state.points.values() if p.is_open]
    if len(still_open) >= 2:
        state.record_conflict(f"points {still_open[-2]} and {still_open[-1]} open at once")


# --- R8: two adopted bests -----------------------------------------------------------------------


def adopted(state: State, attempt: str, compared: str | None) -> None:
    """Record two bests adopted on two branches (R8): an adoption against a best that is not
    the best replay holds. A later adoption on either branch carries the conflict forward,
    so it always names the two bests that compete now."""
    for conflict in state.conflicts:
        match = TWO_BESTS.fullmatch(conflict)
        if match and compared in match.groups():
            rival = match.group("b") if compared == match.group("a") else match.group("a")
            state.conflicts.remove(conflict)
            state.record_conflict(_two_bests(attempt, compared, rival))
            return
    current = state.best.attempt if state.best is not None else None
    if compared != current:
        state.record_conflict(_two_bests(attempt, compared, current))


def _two_bests(attempt: str, compared: str | None, rival: str | None) -> str:
    return (
        f"attempt {attempt} was adopted against best {compared or 'baseline'} while attempt "
        f"{rival or 'baseline'} was the best (adopted on another branch)"
    )


# --- R8: "re-measure both" -------------------------------------------------------------------


def remeasure_chosen(state: State, conflict: str) -> None:
    """Start re-measuring the two bests of `conflict` (a person chose `remeasure`): the best
    goes back to the one both branches last shared, and the conflict stays open, as "to be
    re-measured", until each config has a fresh verdict against it (R8)."""
    match = TWO_BESTS.fullmatch(conflict)
    if match is None:
        return
    parties = (match["a"], match["b"])
    if not all(p in state.attempts for p in parties):
        return
    shared = _shared_best(state, *parties)
    if shared is not None:
        state.best = shared
    state.remeasure = dict.fromkeys(parties)
    state.record_conflict(f"bests {parties[0]} and {parties[1]} to be re-measured")


def _shared_best(state: State, first: str, second: str) -> Best | None:
    """The latest best both `first` and `second` descend from by their verdicts' comparisons
    (None in the chain is the baseline)."""
    ancestry = _compared_chain(state, first)
    shared = next((b for b in _compared_chain(state, second) if b in ancestry), None)
    if shared is None:
        return state.baseline_best
    attempt = state.attempts[shared]
    if attempt.measurement is None:
        return state.baseline_best
    return Best(attempt.config, attempt.measurement, attempt.id)


def _compared_chain(state: State, attempt: str | None) -> list[str | None]:
    chain: list[str | None] = []
    while attempt is not None and attempt not in chain and attempt in state.attempts:
        chain.append(attempt)
        attempt = state.attempts[attempt].compared_best
    return [*chain, None]


def remeasure_started(state: State, attempt: Attempt) -> None:
    """Tie an attempt that measures a competing best's config again to that best."""
    key = measured_key(state, attempt.config)
    for best, current in state.remeasure.items():
        if current is None and measured_key(state, state.attempts[best].config) == key:
            state.remeasure[best] = attempt.id
            return


def remeasure_finished(state: State, attempt: str, status: str) -> None:
    """Close "to be re-measured" once both configs have a fresh verdict (or failure); an
    abandoned re-measurement must be started again."""
    for best, current in state.remeasure.items():
        if current == attempt and status == "abandoned":
            state.remeasure[best] = None
    finished = ("verified", "failed")
    if all(
        a is not None and state.attempts[a].status in finished for a in state.remeasure.values()
    ):
        state.conflicts[:] = [c for c in state.conflicts if not REMEASURE.fullmatch(c)]
        state.remeasure = {}


# --- R10: steps after a stop ---------------------------------------------------------------------


def stopped(state: State) -> None:
    """Record an attempt another branch still had pending when the campaign stopped (R10):
    on one branch a stop abandons the pending attempt first, so only a merge leaves one."""
    if state.pending is not None and state.stopped is not None:
        state.record_conflict(
            f"attempt {state.pending} was pending on another branch when the campaign "
            f"stopped ({state.stopped})"
        )


# --- R3: relaxations of one limit ------------------------------------------------------------


def relaxed(state: State, what: str, event: str, supersedes: Sequence[str] | None) -> None:
    """Keep the relaxations of the `what` limit that no later one supersedes, and record a
    conflict while they hold different limits (R3): two branches relaxed it apart, neither
    seeing the other's. A relaxation supersedes what its branch saw (its recorded premise), so
    the tips, and the conflict, do not depend on the order the merge interleaves them in; tips
    of one value agree. Relaxations recorded before issue 18 supersede every tip."""
    tips = state.relaxation_tips.setdefault(what, [])
    gone = set(tips) if supersedes is None else set(supersedes)
    tips[:] = [*(tip for tip in tips if tip not in gone), event]
    state.conflicts[:] = [
        c for c in state.conflicts if not ((m := RELAXED.fullmatch(c)) and m["what"] == what)
    ]
    if len(tips) > 1:
        limits = {r.event: r.limit for r in state.relaxations if r.event in tips}
        parties: dict[str, str] = {}
        for tip in tips:
            parties.setdefault(_compact(limits[tip]), tip)
        if len(parties) > 1:
            state.record_conflict(
                f"{what} limit relaxed apart on merged branches: "
                + ", ".join(f"{limit} by {tip[:12]}" for limit, tip in parties.items())
            )


def _compact(limit: Any) -> str:
    """A limit as JSON without spaces (a conflict's text is read back with RELAXED_PARTY)."""
    return json.dumps(limit, separators=(",", ":"), sort_keys=True)


# --- R4: stages ----------------------------------------------------------------------------------


def stage_step(state: State, stage: str) -> bool:
    """Record two branches in different stages (R4) when a step of `stage` comes after a later
    stage was entered; True when `stage` is behind the current one (the later stage stays)."""
    current = state.stage
    if current is None or stage == current or stage not in STAGES or current not in STAGES:
        return False
    if STAGES.index(stage) > STAGES.index(current):
        return False
    state.record_conflict(f"stages {stage} and {current} in progress on two branches")
    return True
