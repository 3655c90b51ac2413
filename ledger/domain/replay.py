"""Replay: the pure fold of events into a State (DESIGN §7), one small handler per event type.

Handlers read each event's plain `data` dict directly (see ledger/log/record.py for why no cattrs
structuring happens here). They never refuse: rules are the deciders' job. Events that break a
rule can still meet in a log merged from two branches; replay then records a protocol conflict
in `state.conflicts` and carries on, so status and audit can show it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ledger.domain.samples import median
from ledger.domain.state import (
    Attempt,
    Best,
    Evidence,
    Measurement,
    Point,
    Relaxation,
    State,
    TargetSheet,
)
from ledger.log import codec
from ledger.log.chain import paused_gc
from ledger.log.record import Event
from ledger.schema.events import STAGES, TUNE_SKILLS

ATTEMPT_ID_LEN = 12
_ADOPTED = ("adopt", "target-reached")
_MAX_SKILLS = 3  # R2: 2 base + 1 tune


def attempt_id(event_id: str) -> str:
    """An attempt's id: the first 12 hex characters of its attempt.started event id."""
    return event_id[:ATTEMPT_ID_LEN]


def config_key(config: Mapping[str, Any]) -> str:
    """The key under which a config counts as measured (R9): its JSON with sorted keys.

    Only ever compared with other keys made here, in memory: it is never written. orjson
    makes it 18x faster than the canonical encoder (0.34 vs 6 µs, measured), which matters
    because replay makes one per measured attempt.
    """
    return codec.sorted_json(config)


def replay(events: Iterable[Event], state: State | None = None) -> State:
    """Fold `events` into `state` (a new State when None) and return it."""
    folded = State() if state is None else state
    # The fold allocates a few objects per event and frees none: the collector's passes
    # would rescan the growing state again and again (measured: 2x the fold at 100k events).
    with paused_gc():
        for event in events:
            evolve(folded, event)
    return folded


def evolve(state: State, event: Event) -> State:
    """Apply one event to `state` in place and return it; unknown types raise ValueError."""
    handler = _HANDLERS.get(event.type)
    if handler is None:
        raise ValueError(f"unknown event type {event.type!r}")
    handler(state, event)
    state.event_count += 1
    state.last_event = event.id
    provenance = event.provenance
    key = provenance.get("key") if type(provenance) is dict else None
    if key is not None and event.type != "ledger.repaired":  # a repair is the store's own
        state.keyed.setdefault(key, []).append(event)
    return state


def _conflict(state: State, text: str) -> None:
    if text not in state.conflicts:
        state.conflicts.append(text)


# --- R1 -----------------------------------------------------------------------------------


def _initialized(state: State, event: Event) -> None:
    state.op = event.data["op"]


def _compare(state: State, event: Event) -> None:
    data = event.data
    outputs = [dict(output) for output in data["outputs"]]
    state.compare = Evidence(
        event=event.id,
        impl_digest=data["impl_digest"],
        impl_path=data["impl_path"],
        passed=all(output["all_close"] for output in outputs),
        outputs=outputs,
        origin_level=data["origin"]["level"],
    )


def _layout(state: State, event: Event) -> None:
    data = event.data
    state.layout = Evidence(
        event=event.id,
        impl_digest=data["impl_digest"],
        impl_path=data["impl_path"],
        passed=data["exit_code"] == 0,
        exit_code=data["exit_code"],
        origin_level=data["origin"]["level"],
    )


def _activation_passed(state: State, event: Event) -> None:
    state.activated = True
    state.activation_digest = event.data["impl_digest"]
    state.handed_back = False
    state.activation_problems = []


def _activation_failed(state: State, event: Event) -> None:
    # A failed check closes the gate again until a later activation passes (R1).
    state.activated = False
    state.handed_back = True
    state.activation_problems = list(event.data["problems"])


# --- R2, R3 ---------------------------------------------------------------------------------


def _skill_loaded(state: State, event: Event) -> None:
    name = event.data["name"]
    if name in state.skills:
        _conflict(state, f"skill {name} loaded twice")
        return
    state.skills.append(name)
    tune = [s for s in state.skills if s in TUNE_SKILLS]
    if len(state.skills) > _MAX_SKILLS or len(tune) > 1:
        _conflict(state, f"skill budget exceeded: {', '.join(state.skills)}")


def _skill_unloaded(state: State, event: Event) -> None:
    name = event.data["name"]
    if name in state.skills:
        state.skills.remove(name)
    else:
        _conflict(state, f"skill {name} unloaded while not loaded")


def _target(state: State, event: Event) -> None:
    data = event.data
    origin = data["origin"]
    state.target = TargetSheet(
        event=event.id,
        baseline_us=data["baseline_us"],
        shape=data["shape"],
        target_us=data["target_us"],
        target_source=data["target_source"],
        source_ref=data["source_ref"],
        metric=data["metric"],
        cube_m=data["cube_m"],
        tool=origin.get("tool"),
        origin_level=origin["level"],
    )
    state.measured_configs[config_key(data["config"])] = "baseline"
    if state.adopted:
        # Only a merge can put a sheet after an adopt (the deciders fix it once a stage is
        # entered); the adopted best stays, the rewrite is a conflict to resolve.
        _conflict(state, f"target sheet {event.id[:12]} written after attempts were adopted")
        return
    samples = tuple(data["baseline_samples_us"]) or (data["baseline_us"],)
    # The first best is the baseline, measured with the sheet's config (DESIGN §5).
    state.best = Best(
        config=data["config"],
        measurement=Measurement(
            times_us=samples,
            median_us=data["baseline_us"],
            util_pct=data["util_pct"],
            bubble_pct=data["bubble_pct"],
            origin_level=origin["level"],
        ),
        attempt=None,
    )


def _relaxed(state: State, event: Event) -> None:
    data = event.data
    state.relaxations.append(
        Relaxation(event=event.id, what=data["what"], limit=data["limit"], basis=data["basis"])
    )


# --- R4, R7 ---------------------------------------------------------------------------------


def _stage_entered(state: State, event: Event) -> None:
    stage = event.data["stage"]
    expected = STAGES[len(state.entered)] if len(state.entered) < len(STAGES) else None
    if stage in state.entered:
        _conflict(state, f"stage {stage} entered twice")
    elif stage != expected:
        _conflict(state, f"stage {stage} entered out of order (expected {expected})")
    state.stage = stage
    if stage not in state.entered:
        state.entered.append(stage)


def _stage_exited(state: State, event: Event) -> None:
    state.exited[event.data["stage"]] = event.data["condition"]


def _point_opened(state: State, event: Event) -> None:
    data = event.data
    name = data["name"]
    if name in state.points:
        _conflict(state, f"point {name} opened twice")
    if state.open_point is not None and state.open_point != name:
        _conflict(state, f"points {state.open_point} and {name} open at once")
    if name not in state.points or not state.points[name].is_open:
        state.open_points += 1
    state.points[name] = Point(stage=data["stage"], name=name)
    state.open_point = name


def _point_closed(state: State, event: Event) -> None:
    data = event.data
    point = state.points[data["name"]]
    if point.is_open:
        state.open_points -= 1
    point.is_open = False
    point.outcome = data["outcome"]
    point.reason = data["reason"]
    if state.open_point == point.name:
        # Only merged branches leave a second point open (a recorded conflict): it becomes
        # the open point, so it can still be closed (R7). The search is skipped otherwise,
        # so closing a point stays O(1).
        state.open_point = (
            next((p.name for p in reversed(state.points.values()) if p.is_open), None)
            if state.open_points
            else None
        )


# --- attempts (R6-R9) -------------------------------------------------------------------------


def _attempt_started(state: State, event: Event) -> None:
    data = event.data
    aid = attempt_id(event.id)
    # Positional arguments on the replay path: attrs' __init__ takes them 3.8x faster than
    # keywords (1.0 vs 3.8 µs for an Attempt, measured); the order is State's field order.
    attempt = Attempt(
        aid,
        len(state.attempts) + 1,
        data["kind"],
        data["stage"],
        data["point"],
        data["config"],
        data["param"],
        data["value"],
        data["prior"],
        data["description"],
        data["impl_digest"],
        data["retry_override"],
    )
    state.attempts[aid] = attempt
    if state.pending is not None:
        _conflict(state, f"attempts {state.pending} and {aid} pending at once")
    if state.stopped is not None:
        _conflict(state, f"attempt {aid} started after the campaign stopped ({state.stopped})")
    state.pending = aid
    point = state.points.get(attempt.point) if attempt.point else None
    if point is not None:
        point.attempts.append(aid)
        if attempt.kind == "candidate":
            point.candidates += 1
        elif attempt.kind == "mutation":
            point.mutations += 1
    if attempt.retry_override:
        state.overrides.append((aid, attempt.retry_override))


def _measured(state: State, event: Event) -> None:
    data = event.data
    attempt = state.attempts[data["attempt"]]
    times = tuple(data["times_us"])
    attempt.measurement = Measurement(  # positional, in field order (see _attempt_started)
        times,
        median(times),
        data["util_pct"],
        data["bubble_pct"],
        data["origin"]["level"],
        data["metrics"],
        all(output["all_close"] for output in data["outputs"]),
        data["layout_exit"],
    )
    _mark_measured(state, attempt)


def _mark_measured(state: State, attempt: Attempt) -> None:
    # Algorithm attempts keep the best config and change the implementation: their config
    # says nothing about which configs were tried (R9 compares their descriptions instead).
    if attempt.kind != "algorithm":
        state.measured_configs[config_key(attempt.config)] = attempt.id


def _finish(state: State, attempt: Attempt, status: str) -> None:
    if attempt.status != "pending":
        _conflict(state, f"attempt {attempt.id} {status} after it was {attempt.status}")
    attempt.status = status
    if state.pending == attempt.id:
        # Only merged branches leave a second attempt pending (a recorded conflict); the
        # search is skipped otherwise, so finishing an attempt stays O(1).
        state.pending = _still_pending(state) if state.conflicts else None


def _still_pending(state: State) -> str | None:
    """The most recently started attempt that is still pending, if any."""
    return next((a.id for a in reversed(state.attempts.values()) if a.status == "pending"), None)


def _verdict(state: State, event: Event) -> None:
    data = event.data
    attempt = state.attempts[data["attempt"]]
    _finish(state, attempt, "verified")
    attempt.verdict = data["verdict"]
    attempt.failure = data["failure"]
    attempt.compared_us = data["best_median_us"]
    adopted = attempt.verdict in _ADOPTED
    if adopted and attempt.measurement is not None:
        _check_compared_best(state, attempt.id, data["best_attempt"])
        state.best = Best(attempt.config, attempt.measurement, attempt.id)
        state.adopted.append(attempt.id)
    point = state.points.get(attempt.point) if attempt.point else None
    if point is not None and attempt.kind == "mutation":
        # Consecutive mutations without gain (R7): an adopt resets, failures do not count.
        if adopted:
            point.streak = 0
        elif attempt.failure is None:
            point.streak += 1


def _check_compared_best(state: State, aid: str, compared: str | None) -> None:
    """Record a conflict when an attempt was adopted against a best that is no longer the
    best: two branches each adopted an attempt against the same earlier best (R8)."""
    current = state.best.attempt if state.best is not None else None
    if compared != current:
        _conflict(
            state,
            f"attempt {aid} was adopted against best {compared or 'baseline'} "
            f"while attempt {current or 'baseline'} was the best (adopted on another "
            "branch)",
        )


def _failed(state: State, event: Event) -> None:
    data = event.data
    attempt = state.attempts[data["attempt"]]
    _finish(state, attempt, "failed")
    attempt.verdict = "rollback"
    attempt.failure = data["category"]
    attempt.detail = data["detail"]
    _mark_measured(state, attempt)


def _abandoned(state: State, event: Event) -> None:
    data = event.data
    attempt = state.attempts[data["attempt"]]
    _finish(state, attempt, "abandoned")
    attempt.detail = data["reason"]


# --- reports, stop, policy, bookkeeping -------------------------------------------------------


def _report(state: State, event: Event) -> None:
    state.reports.append(event.id)
    if "incore" in state.exited:
        state.report_after_incore = True


def _stopped(state: State, event: Event) -> None:
    state.stopped = event.data["reason"]
    state.stop_detail = event.data["detail"]


def _policy(state: State, event: Event) -> None:
    key, value = event.data["key"], event.data["value"]
    if key == "defaults":
        # The defaults pinned at init never override a value set explicitly.
        state.policy = {**dict(value), **state.policy}
    else:
        state.policy[key] = value


def _note(state: State, event: Event) -> None:
    state.notes.append(event.data["text"])


def _repaired(state: State, event: Event) -> None:
    state.repairs.append(dict(event.data))


def _conflict_resolved(state: State, event: Event) -> None:
    conflict = event.data["conflict"]
    if conflict in state.conflicts:
        state.conflicts.remove(conflict)
    # "best:<attempt>" chooses which of two adopted attempts is the best (ledger/git/resolve.py);
    # the other resolutions are carried by the events recorded before this one.
    kind, _, chosen = str(event.data["resolution"]).partition(":")
    attempt = state.attempts.get(chosen) if kind == "best" else None
    if attempt is not None and attempt.measurement is not None:
        state.best = Best(
            config=attempt.config, measurement=attempt.measurement, attempt=attempt.id
        )


_HANDLERS: Mapping[str, Callable[[State, Event], None]] = {
    "op.initialized": _initialized,
    "evidence.compare": _compare,
    "evidence.layout": _layout,
    "activation.passed": _activation_passed,
    "activation.failed": _activation_failed,
    "skill.loaded": _skill_loaded,
    "skill.unloaded": _skill_unloaded,
    "target.set": _target,
    "limit.relaxed": _relaxed,
    "stage.entered": _stage_entered,
    "stage.exited": _stage_exited,
    "point.opened": _point_opened,
    "point.closed": _point_closed,
    "attempt.started": _attempt_started,
    "attempt.measured": _measured,
    "attempt.verdict": _verdict,
    "attempt.failed": _failed,
    "attempt.abandoned": _abandoned,
    "report.generated": _report,
    "campaign.stopped": _stopped,
    "policy.set": _policy,
    "note.added": _note,
    "ledger.repaired": _repaired,
    "conflict.resolved": _conflict_resolved,
}
