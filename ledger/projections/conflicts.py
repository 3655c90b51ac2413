"""Merge conflicts as text (DESIGN §8): what `status`, `check`, `audit`, MEMORY.md and the
`conflicts` command say about each typed conflict (stages/conflicts.py), and the command
that resolves it, naming it by its id.
"""

from __future__ import annotations

import json
from typing import Any

from ledger.domain.hints import TEXT, Fill, Step
from ledger.domain.state import State
from ledger.schema.conflicts import Conflict
from stages.conflicts import REMEASURE, conflicts, options


def text(state: State, conflict: Conflict) -> str:
    """The conflict in the protocol's words, with the facts that make it one."""
    p = conflict.parties
    kind = conflict.kind
    if kind == "attempts-pending":
        return f"attempts {p[0]} and {p[1]} pending at once"
    if kind == "after-stop":
        return f"attempt {p[0]} started after the campaign stopped ({_stop(state, kind, p[0])})"
    if kind == "pending-at-stop":
        return (
            f"attempt {p[0]} was pending on another branch when the campaign stopped "
            f"({_stop(state, kind, p[0])})"
        )
    if kind == "bests":
        adopted = state.attempts.get(p[0])
        against = (adopted.compared_best if adopted else None) or "baseline"
        return (
            f"attempt {p[0]} was adopted against best {against} while attempt {p[1]} was the "
            "best (adopted on another branch)"
        )
    if kind == REMEASURE:
        return f"bests {p[0]} and {p[1]} to be re-measured"
    if kind == "points-open":
        return f"points {p[0]} and {p[1]} open at once"
    if kind == "point-reopened":
        return f"point {p[0]} opened twice"
    if kind == "stages-apart":
        return f"stages {p[0]} and {p[1]} in progress on two branches"
    if kind == "stage-order":
        return f"stage {p[0]} entered out of order (expected {p[1]})"
    if kind == "limits-apart":
        return _limits_apart(state, p)
    if kind == "skill-budget":
        return f"skill budget exceeded: {', '.join(p)}"
    if kind == "sheet-after-adopt":
        return f"target sheet {p[0]} written after attempts were adopted"
    return f"attempt {p[0]} {p[2]} after it was {p[1]}"  # finished-twice


def _stop(state: State, kind: str, attempt: str) -> str:
    """The reason of the stop an attempt came after (or was pending at)."""
    facts = state.merge.started_after_stop if kind == "after-stop" else state.merge.pending_at_stop
    return next((reason for a, reason in facts if a == attempt), "?")


def _limits_apart(state: State, relaxations: tuple[str, ...]) -> str:
    """The limits the branches ended with, each with the relaxation that set it (R3)."""
    found = [
        next((r for r in state.relaxations if r.event.startswith(party)), None)
        for party in relaxations
    ]
    what = next((r.what for r in found if r is not None), "vec")
    limits = ", ".join(
        f"{json.dumps(r.limit, separators=(',', ':'), sort_keys=True) if r else '?'} by {party}"
        for party, r in zip(relaxations, found, strict=True)
    )
    return f"{what} limit relaxed apart on merged branches: {limits}"


def command(state: State, conflict: Conflict) -> str:
    """The command line that resolves `conflict`, with its resolutions; for two bests being
    re-measured, the commands that measure them."""
    op = state.op
    if conflict.kind == REMEASURE:
        from stages import remeasure  # only here: rendering MEMORY.md loads no decider

        return remeasure.next_step(state) or str(Step("status", op))
    resolve = Step("resolve", op, conflict=conflict.id, resolution=Fill("RESOLUTION"), reason=TEXT)
    return f"{resolve}, RESOLUTION one of: {', '.join(options(state, conflict))}"


def texts(state: State) -> list[str]:
    """Each open conflict as text (the `conflicts` of status and audit)."""
    return [text(state, c) for c in conflicts(state)]


def findings(state: State) -> list[str]:
    """One finding per open conflict, with the command that resolves it (for check)."""
    return [
        f"unresolved merge conflict: {text(state, c)}; "
        f"{'to close it' if c.kind == REMEASURE else 'resolve it'}: {command(state, c)}"
        for c in conflicts(state)
    ]


def listing(state: State) -> list[dict[str, Any]]:
    """The open conflicts with their numbers, ids and resolutions (the `conflicts` view)."""
    return [
        {
            "number": number,
            "id": conflict.id,
            "kind": conflict.kind,
            "parties": list(conflict.parties),
            "conflict": text(state, conflict),
            "options": list(options(state, conflict)),
            "next": command(state, conflict),
        }
        for number, conflict in enumerate(conflicts(state), start=1)
    ]
