"""How the campaign's records change the state: reports (R4), the stop (R10), policy values,
notes, torn-tail repairs, accepted rollbacks and the resolutions of merge conflicts; the
handlers replay registers (ledger/domain/replay.py says how they fold)."""

from __future__ import annotations

from typing import Any

from ledger.domain import fold_merges as merges
from ledger.domain.keys import rekey_measured
from ledger.domain.state import Best, PersonAct, RecordedManifest, State
from ledger.log.record import Event
from ledger.schema.conflicts import Conflict


def person_act(
    state: State, event: Event, kind: str, what: str, reason: str, **policy: Any
) -> None:
    """Keep a step that may be a person's decision, with the person the event names (None: not
    given, or unknown before issue 27)."""
    act = PersonAct(event.id, kind, what, reason, event.data.get("person"), **policy)
    state.person_acts.append(act)


def report(state: State, event: Event) -> None:
    """Record a report, and whether it came after incore exited (R4)."""
    state.attempts_at_report = len(state.attempts)
    if "incore" in state.exited:
        state.report_after_incore = True
    if state.stopped is not None:
        state.stop_report = event.data["path"]


def stopped(state: State, event: Event) -> None:
    """Record the campaign's stop and its reason (R10), and the attempt pending then (a user
    stop abandons it in the same batch; only another branch leaves it pending)."""
    state.stopped = event.data["reason"]
    state.stop_detail = event.data["detail"]
    state.stop_report = None  # a report written before this stop does not show how it ended
    if state.pending is not None:
        state.merge.pending_at_stop.append((state.pending, state.stopped))


def handed_back(state: State, event: Event) -> None:
    """Record that the result went back to the orchestrator with its report (R10)."""
    state.handback = {"report": event.data["report"], "summary": event.data["summary"]}


def resumed(state: State, event: Event) -> None:
    """Lift the stop (utilization, or budget) a person decided to go past (R10): a person's
    decision."""
    detail = event.data["lifted"] or "no detail"
    what = f"lifted the {state.stopped or 'utilization'} stop ({detail})"
    person_act(state, event, "resume-campaign", what, event.data["reason"])
    state.stopped = None
    state.stop_detail = ""
    state.stop_report = None


def policy(state: State, event: Event) -> None:
    """Set a policy value; the defaults pinned at init never override a set value."""
    key, value = event.data["key"], event.data["value"]
    if key == "defaults":
        # The defaults pinned at init never override a value set explicitly.
        state.policy = {**dict(value), **state.policy}
        state.policy_defaults = dict(value)
    else:
        before = state.policy.get(key, "auto" if key == "require_measured" else None)
        reason = event.data.get("reason", "")
        state.policy[key] = value
        state.policy_reasons[key] = reason
        # Whether it lowered a guard is stages.person's call (the guards live in stages/).
        person_act(
            state, event, "policy", f"policy {key}", reason, key=key, before=before, value=value
        )


def note(state: State, event: Event) -> None:
    """Add a note."""
    state.notes.append(event.data["text"])


def repaired(state: State, event: Event) -> None:
    """Add a torn-tail repair."""
    state.repairs.append(dict(event.data))


def rollback_accepted(state: State, event: Event) -> None:
    """Record the lost event a person accepted, so the rollback check passes even before
    MEMORY.md is re-rendered; a person's decision."""
    state.rollbacks_accepted.append(event.data["missing"])
    lost = f"accepted a rollback: the ledger lost {event.data['missing']}"
    person_act(state, event, "accept-rollback", lost, event.data["reason"])


def conflict_resolved(state: State, event: Event) -> None:
    """Record a conflict as resolved; a `best:<attempt>` resolution makes that attempt the
    best, a `limit:<relaxation>` one puts that relaxation in force (R3), `remeasure` starts
    measuring both bests again (R8)."""
    data = event.data
    conflict = Conflict(kind=data["conflict"]["kind"], parties=data["conflict"]["parties"])
    resolution = str(data["resolution"])
    state.merge.resolved[conflict.id] = resolution
    # The other resolutions are carried by the events recorded before this one
    # (stages/resolve.py).
    kind, _, chosen = resolution.partition(":")
    if kind == "limit":
        merges.put_in_force(state, chosen)
        return
    if kind == "remeasure" and conflict.kind == "bests":
        merges.remeasure_chosen(state, conflict.parties)
        return
    attempt = state.attempts.get(chosen) if kind == "best" else None
    if attempt is not None and attempt.measurement is not None:
        state.best = Best(
            config=attempt.config, measurement=attempt.measurement, attempt=attempt.id
        )


def manifest(state: State, event: Event) -> None:
    """Use a recorded op manifest from here on."""
    data = event.data
    state.manifest = RecordedManifest(
        event=event.id,
        digest=data["digest"],
        source=data["source"],
        declared=data["declared"],
        measured_only=data.get("measured_only", False),
    )
    state.manifests.append(data["digest"])
    rekey_measured(state)
