"""What the state allows next (status `allowed`).

`allowed` asks the same blocker functions the deciders use, so it cannot drift from them. It
lists every step allowed now by its CLI name (the MCP server renders them as its tools' names,
ledger/domain/hints.py): the protocol's next steps (`protocol_steps`, what resume offers as
next) in the protocol's order, then what works at any time while the campaign runs (notes,
policies, the report, the reads). After a stop it lists everything that still works (R10: the
report, the hand-back, lifting a utilization stop, notes, policies and the reads); while a
merge conflict is open, only what finishes or re-measures.
"""

from __future__ import annotations

from ledger.domain.state import State
from ledger.schema.events import SKILLS
from stages.activation import evidence_ready
from stages.conflicts import conflicts
from stages.pipeline import active_stage, entry_blocker, exit_blocker, next_stage
from stages.policy import declares_verifier
from stages.search import (
    algorithm_blocker,
    candidate_blocker,
    close_blocker,
    mutation_blocker,
    open_blocker,
)
from stages.skills import load_blocker
from stages.stop import after_stop

# Allowed whenever the op exists, even after a stop (R10); not listed by `allowed`.
# What works at any time while the campaign runs: notes, policies, the report and the reads
# (issue 28: `allowed` is complete, not only the protocol's next steps). Listed after those;
# after a stop `after_stop` names its own, and a merge conflict gates to finishing it.
ALWAYS = ("note", "policy", "report")  # the writes accepted at any time after init
ANYTIME = (*ALWAYS, "status", "resume", "log", "audit")


def allowed(state: State) -> list[str]:
    """The CLI names of every step allowed now: the protocol's next steps in its order, then,
    while the campaign runs and no merge conflict gates it, what works at any time."""
    steps = protocol_steps(state)
    if state.op is None or state.stopped is not None or conflicts(state):
        return steps
    return [*steps, *(name for name in ANYTIME if name not in steps)]


def protocol_steps(state: State) -> list[str]:
    """The CLI names of the protocol steps allowed next, in the order of the protocol."""
    if state.op is None:
        return ["init"]
    if state.stopped is not None:
        return after_stop(state)
    if not state.activated:
        names = ["evidence compare", "evidence layout"]
        return [*names, "activate"] if evidence_ready(state) else names
    if conflicts(state):  # the merge gate: finishing what is in flight, re-measuring (§8)
        pending = ["verify", "fail", "abandon"] if state.pending is not None else []
        remeasuring = None in state.remeasure.values() and state.pending is None
        return [*(["candidate"] if remeasuring else []), *pending]
    names = []
    if state.target is None:
        names.append("target")
    if "algorithm" not in state.entered:
        names.append("relax")
    if any(load_blocker(state, skill) is None for skill in SKILLS):
        names.append("skill load")
    if state.skills:
        names.append("skill unload")
    upcoming = next_stage(state)
    if upcoming == "algorithm" and "incore" in state.exited and not state.report_after_incore:
        names.append("report")
    if upcoming is not None and entry_blocker(state, upcoming) is None:
        names.append("stage enter")
    current = active_stage(state)
    if current is not None and exit_blocker(state, current, by_user=True) is None:
        names.append("stage exit")
    if open_blocker(state) is None:
        names.append("point open")
    if close_blocker(state) is None:
        names.append("point close")
    if candidate_blocker(state) is None:
        names.append("candidate")
    if mutation_blocker(state) is None or algorithm_blocker(state) is None:
        names.append("try")
    if state.pending is not None:
        names.extend([*finishing(state)])
    names.append("stop")
    return names


def finishing(state: State) -> tuple[str, ...]:
    """What finishes the pending attempt: `measure` first where SPEC.md declares a verifier (the
    ledger runs it), then a typed verify, a failure or giving it up."""
    by_hand = ("verify", "fail", "abandon")
    return ("measure", *by_hand) if declares_verifier(state) else by_hand
