"""How the campaign's gates change the state: evidence and activation (R1), skills (R2), the
target sheet and relaxations (R3), stages (R4) and optimization points (R7); the handlers
replay registers (ledger/domain/replay.py says how they fold)."""

from __future__ import annotations

from ledger.domain import fold_merges as merges
from ledger.domain.fold_records import person_act
from ledger.domain.keys import measured_key
from ledger.domain.state import (
    Best,
    Evidence,
    Measurement,
    Point,
    Relaxation,
    State,
    TargetSheet,
)
from ledger.log import codec
from ledger.log.record import Event
from ledger.log.upcast import relative_op_path


def initialized(state: State, event: Event) -> None:
    """The op's name."""
    state.op = event.data["op"]


def compare(state: State, event: Event) -> None:
    """The latest E2E compare evidence, passed when every output is close (R1)."""
    data = event.data
    outputs = [dict(output) for output in data["outputs"]]
    state.compare = Evidence(
        event=event.id,
        impl_digest=data["impl_digest"],
        impl_path=relative_op_path(data["impl_path"], state.op),
        passed=all(output["all_close"] for output in outputs),
        outputs=outputs,
        origin_level=data["origin"]["level"],
    )


def layout(state: State, event: Event) -> None:
    """The latest layout evidence, passed on exit code 0 (R1)."""
    data = event.data
    state.layout = Evidence(
        event=event.id,
        impl_digest=data["impl_digest"],
        impl_path=relative_op_path(data["impl_path"], state.op),
        passed=data["exit_code"] == 0,
        exit_code=data["exit_code"],
        origin_level=data["origin"]["level"],
    )


def activation_passed(state: State, event: Event) -> None:
    """Open the R1 gate for the implementation with this digest."""
    state.activated = True
    state.activation_digest = event.data["impl_digest"]
    state.handed_back = False
    state.activation_problems = []


def activation_failed(state: State, event: Event) -> None:
    """Close the R1 gate again and record the hand-back's problems."""
    # A failed check closes the gate again until a later activation passes (R1).
    state.activated = False
    state.handed_back = True
    state.activation_problems = list(event.data["problems"])


# --- R2, R3 ---------------------------------------------------------------------------------


def skill_loaded(state: State, event: Event) -> None:
    """Add a loaded skill (merged branches may load more than the budget, R2)."""
    name = event.data["name"]
    if name in state.skills:
        return  # two branches loaded the same skill: both agree it is loaded
    state.skills.append(name)


def skill_unloaded(state: State, event: Event) -> None:
    """Remove an unloaded skill (two branches that both unloaded it agree it is not loaded)."""
    name = event.data["name"]
    if name in state.skills:
        state.skills.remove(name)


def target(state: State, event: Event) -> None:
    """The target sheet, and the baseline as the first best unless attempts were adopted (R3)."""
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
        at=event.provenance.get("at") if isinstance(event.provenance, dict) else None,
        target_origin_level=(data.get("target_origin") or {}).get("level"),
        device=data["device"],
    )
    state.baseline_config = data["config"]
    state.measured_configs[measured_key(state, data["config"])] = "baseline"
    if state.adopted:
        # Only a merge can put a sheet after an adopt (the deciders fix it once a stage is
        # entered); the adopted best stays.
        state.merge.sheets_after_adopt.append(event.id[:12])
        return
    samples = tuple(data["baseline_samples_us"]) or (data["baseline_us"],)
    # The first best is the baseline, measured with the sheet's config (DESIGN §5).
    state.best = state.baseline_best = Best(
        config=data["config"],
        measurement=Measurement(
            times_us=samples,
            median_us=data["baseline_us"],
            util_pct=data["util_pct"],
            bubble_pct=data["bubble_pct"],
            origin_level=origin["level"],
            device=data["device"],
            verifier_digest=origin.get("verifier_digest"),
        ),
        attempt=None,
    )


def relaxed(state: State, event: Event) -> None:
    """Add a tile-limit relaxation with its basis, and keep the relaxations no later one
    supersedes (R3)."""
    data = event.data
    evidence = tuple(data.get("evidence") or ())
    person = data.get("person")
    state.relaxations.append(
        Relaxation(
            event=event.id,
            what=data["what"],
            limit=data["limit"],
            basis=data["basis"],
            evidence=evidence,
            person=person,
        )
    )
    if not evidence:
        # Without measured evidence: a person's decision (issue 27; before it, person unknown).
        limit = codec.canonical_json(data["limit"])
        what = f"{data['what']} tile limit relaxed to {limit} without measured evidence"
        person_act(state, event, "relax", what, data["basis"])
    merges.relaxed(state, data["what"], event.id, data.get("supersedes"))


# --- R4, R7 ---------------------------------------------------------------------------------


def stage_entered(state: State, event: Event) -> None:
    """Enter a stage (R4): two branches entering the same stage agree; one behind a stage
    another branch entered leaves the later one current (`state.entered` keeps the order)."""
    stage = event.data["stage"]
    if stage == state.stage or merges.stage_behind(state, stage):
        return  # the later stage stays current: stages are never entered backwards (R4)
    state.stage = stage
    if stage not in state.entered:
        state.entered.append(stage)


def stage_exited(state: State, event: Event) -> None:
    """Record a stage's exit condition (R4)."""
    state.exited[event.data["stage"]] = event.data["condition"]


def point_opened(state: State, event: Event) -> None:
    """Open an optimization point (R7; merged branches may leave two open)."""
    data = event.data
    name = data["name"]
    merges.stage_behind(state, data["stage"])
    existing = state.points.get(name)
    if existing is not None and existing.is_open and existing.stage == data["stage"]:
        return  # two branches opened the same point: one point, both branches' attempts
    if existing is not None:
        state.merge.reopened_points.append(name)
    if name not in state.points or not state.points[name].is_open:
        state.open_points += 1
    state.points[name] = Point(stage=data["stage"], name=name, knobs=list(data.get("knobs", ())))
    state.open_point = name


def point_closed(state: State, event: Event) -> None:
    """Close an optimization point with its outcome (R7)."""
    data = event.data
    point = state.points[data["name"]]
    if point.is_open:
        state.open_points -= 1
    point.is_open = False
    point.outcome = data["outcome"]
    point.reason = data["reason"]
    if state.open_point == point.name:
        # Only merged branches leave a second point open: it becomes
        # the open point, so it can still be closed (R7). The search is skipped otherwise,
        # so closing a point stays O(1).
        state.open_point = (
            next((p.name for p in reversed(state.points.values()) if p.is_open), None)
            if state.open_points
            else None
        )
