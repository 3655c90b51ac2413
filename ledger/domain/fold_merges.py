"""What replay records about merged branches' steps (DESIGN §8): facts only.

A merged ledger interleaves the batches of two branches in canonical order, so replay passes
through moments no branch ever saw (two attempts started, neither finished yet). The fold
keeps the facts such moments leave (in `State.merge`, and the relaxations no later one
supersedes); stages/conflicts.py decides which of them break a rule. Here too: what a
resolution changes ("re-measure both" puts back the best both branches last shared).
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.domain.keys import measured_key
from ledger.domain.state import Attempt, Best, State
from ledger.schema.events import STAGES


def stage_behind(state: State, stage: str) -> bool:
    """True, recording the fact, when a step of `stage` comes after a later stage was
    entered (R4: another branch went on; the later stage stays current)."""
    current = state.stage
    if current is None or stage == current or stage not in STAGES or current not in STAGES:
        return False
    if STAGES.index(stage) > STAGES.index(current):
        return False
    if (stage, current) not in state.merge.steps_behind:
        state.merge.steps_behind.append((stage, current))
    return True


def relaxed(state: State, what: str, event: str, supersedes: Sequence[str] | None) -> None:
    """Keep the relaxations of the `what` limit that no later one supersedes (R3). A
    relaxation supersedes what its branch saw (its recorded premise), so the tips do not
    depend on the order a merge interleaves them in; more than one only where two branches
    relaxed it apart. Relaxations recorded before issue 18 supersede every tip."""
    tips = state.relaxation_tips.setdefault(what, [])
    gone = set(tips) if supersedes is None else set(supersedes)
    tips[:] = [*(tip for tip in tips if tip not in gone), event]


def put_in_force(state: State, relaxation: str) -> None:
    """Make the chosen relaxation the one tip of its limit, and move it last: the latest of
    its kind is the one in force (R3)."""
    chosen = next((r for r in state.relaxations if r.event.startswith(relaxation)), None)
    if relaxation and chosen is not None:
        state.relaxations.remove(chosen)
        state.relaxations.append(chosen)
        state.relaxation_tips[chosen.what] = [chosen.event]


# --- R8: "re-measure both" -------------------------------------------------------------------


def remeasure_chosen(state: State, bests: Sequence[str]) -> None:
    """Start re-measuring two competing `bests` (a person chose `remeasure`): the best goes
    back to the one both branches last shared, until each config has a fresh verdict (R8)."""
    if len(bests) != 2 or not all(b in state.attempts for b in bests):
        return
    shared = _shared_best(state, bests[0], bests[1])
    if shared is not None:
        state.best = shared
    state.remeasure = dict.fromkeys(bests)


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
    """End re-measuring once both configs have a fresh verdict (or failure); an abandoned
    re-measurement must be started again."""
    for best, current in state.remeasure.items():
        if current == attempt and status == "abandoned":
            state.remeasure[best] = None
    finished = ("verified", "failed")
    if all(
        a is not None and state.attempts[a].status in finished for a in state.remeasure.values()
    ):
        state.remeasure = {}
