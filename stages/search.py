"""R5-R7 Constrained search: points, candidates, single-parameter mutations, algorithm changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger.domain.hints import NAME, TEXT, Fill, Step, arg
from ledger.domain.state import Attempt, Point, State
from ledger.errors import BadInput
from ledger.schema.events import CONFIG_STAGES, AttemptStarted, PointClosed, PointOpened
from stages.changes import (
    changed_knobs,
    knob_refusal,
    point_knobs,
    same_impl_refusal,
    start_refusal,
    unchanged_refusal,
)
from stages.outcome import Result, accept, build, nonempty, plain, refuse
from stages.pipeline import active_stage, algorithm_step, next_stage
from stages.policy import declares_verifier, effective_policy, patience
from stages.refusal import Refusal
from stages.retry import config_retry, idea_retry, override_reason
from stages.target import limit_refusal, validate_config

if TYPE_CHECKING:  # annotations only: priors and log read these modules, not the commands
    from stages.commands import ClosePoint, OpenPoint, ProposeCandidate, TryAlgorithm, TryMutation

_OVERRIDE_UNUSED = "the retry override was not needed (nothing refused) and is not recorded"


def pending_blocker(state: State) -> Refusal | None:
    """Refuse a second change while an attempt is pending (R6)."""
    if state.pending is None:
        return None
    return refuse(
        "R6",
        "one change at a time: an attempt is pending",
        f"attempt {state.pending} is pending",
        f"finish attempt {state.pending} first: "
        + (
            f"{Step('measure', state.op, attempt=state.pending)}, or "
            if declares_verifier(state)
            else ""
        )
        + "verify, fail or abandon it",
    )


def config_stage_blocker(state: State, change: str) -> Refusal | None:
    """Refuse a config change outside an active stage 1-3 (R4, R5)."""
    stage = active_stage(state)
    if stage is None:
        return refuse(
            "R4",
            f"a {change} needs a current stage",
            "no stage is current",
            f"enter the next stage ({Step('stage enter', state.op, name=next_stage(state))})",
        )
    if stage not in CONFIG_STAGES:
        return refuse(
            "R5",
            f"the {stage} stage changes the algorithm only, not the config",
            f"current stage: {stage}",
            algorithm_step(state),
        )
    return None


def point_blocker(state: State) -> Refusal | None:
    """Refuse an attempt in stages 1-3 outside an open point (R7)."""
    if state.open_point is None:
        return refuse(
            "R7",
            "every attempt in stages 1-3 belongs to an open optimization point",
            "no point is open",
            str(Step("point open", state.op, name=NAME)),
        )
    return None


def _first(*blockers: Refusal | None) -> Refusal | None:
    return next((b for b in blockers if b is not None), None)


def open_blocker(state: State) -> Refusal | None:
    """Why no point may be opened now (R4, R6, R7), or None."""
    stage = active_stage(state)
    if stage is not None and stage not in CONFIG_STAGES:
        return refuse(
            "R7",
            "optimization points belong to stages 1-3",
            f"current stage: {stage}",
            algorithm_step(state),
        )
    return _first(
        config_stage_blocker(state, "point"),
        pending_blocker(state),
        None
        if state.open_point is None
        else refuse(
            "R7",
            "one optimization point at a time",
            f"point {state.open_point} is open",
            f"close it first ({Step('point close', state.op, name=state.open_point, reason=TEXT)})",
        ),
    )


def decide_open(state: State, command: OpenPoint) -> Result:
    """Open an optimization point in the current stage 1-3 (R7)."""
    name = nonempty(command.name, "the point name")
    blocker = open_blocker(state)
    if blocker is not None:
        return blocker
    if name in state.points:
        earlier = state.points[name]
        return refuse(
            "R7",
            f"point {name} was already opened in {earlier.stage}",
            f"point {name}: {earlier.outcome or 'open'}",
            "open a point by a new name",
        )
    knobs = point_knobs(state, name, command.knobs)
    if isinstance(knobs, Refusal):
        return knobs
    return accept(build(PointOpened, "point", stage=active_stage(state), name=name, knobs=knobs))


def close_blocker(state: State) -> Refusal | None:
    """Why the open point may not be closed now (R6, R7), or None."""
    if state.open_point is None:
        return refuse(
            "R7",
            "no optimization point is open",
            "no point is open",
            f"open one ({Step('point open', state.op, name=NAME)})",
        )
    return pending_blocker(state)


def decide_close(state: State, command: ClosePoint) -> Result:
    """Close the open point, as not applicable (with a reason) or done (R7)."""
    point = state.points.get(command.name)
    if point is None:
        raise BadInput(
            f"unknown point {command.name!r}", hint=f"points: {', '.join(state.points) or 'none'}"
        )
    if not point.is_open:
        return refuse(
            "R7",
            f"point {point.name} is already closed",
            f"point {point.name}: {point.outcome}",
            "open the next point",
        )
    blocker = close_blocker(state)
    if blocker is not None:
        return blocker
    outcome = "not-applicable" if command.not_applicable else "closed"
    return accept(
        build(
            PointClosed,
            "point close",
            stage=point.stage,
            name=point.name,
            outcome=outcome,
            reason=command.reason,
        )
    )


def _open_point(state: State) -> Point:
    if state.open_point is None:  # callers check point_blocker first
        raise BadInput("no optimization point is open")
    return state.points[state.open_point]


def candidate_blocker(state: State) -> Refusal | None:
    """Why no candidate may start now (R4-R7), or None."""
    blocker = _first(
        config_stage_blocker(state, "candidate"), pending_blocker(state), point_blocker(state)
    )
    if blocker is not None:
        return blocker
    point = _open_point(state)
    if point.mutations:
        return refuse(
            "R7",
            f"the candidate phase of point {point.name} is over",
            f"{point.mutations} mutation(s) started in point {point.name}",
            f"mutate the best config one parameter at a time "
            f"({Step('try', state.op, change=Fill('PARAM=JSON'))})",
        )
    return None


def _config_refusal(
    state: State,
    config: dict[str, Any],
    what: str,
    override: str | None,
    command: ProposeCandidate | TryMutation,
) -> Refusal | None:
    cube_m = state.target.cube_m if state.target else None
    best = state.best.config if state.best else {}
    return _first(
        knob_refusal(state, changed_knobs(state, best, config), _open_point(state)),
        limit_refusal(state, config, what, cube_m),
        start_refusal(state, command.disk_digest, command.impl_file),
        None if override else config_retry(state, config),
    )


def decide_candidate(state: State, command: ProposeCandidate) -> Result:
    """Start a candidate: a full config with its prior, in the candidate phase (R7, R9)."""
    blocker = candidate_blocker(state)
    if blocker is not None:
        return blocker
    prior = nonempty(command.prior, "the candidate's prior (its provenance)")
    config = validate_config(command.config, "the candidate config")
    point, policy = _open_point(state), effective_policy(state)
    warning = None
    if point.candidates + 1 > int(policy["candidates_max"]):
        warning = (
            f"point {point.name} has {point.candidates + 1} candidates, more than "
            f"the {policy['candidates_max']} the policy expects (R7)"
        )
    return _start(state, command, "candidate", config, "the candidate config", warning, prior=prior)


def _start(
    state: State,
    command: ProposeCandidate | TryMutation,
    kind: str,
    config: dict[str, Any],
    what: str,
    warning: str | None,
    **fields: Any,
) -> Result:
    """Start a candidate or a mutation of `config` in the open point (R7, R9)."""
    override = override_reason(command.override)
    refusal = _config_refusal(state, config, what, override, command)
    if refusal is not None:
        return refusal
    point = _open_point(state)
    recorded, note = _recorded_override(state, config, override)
    return accept(
        build(
            AttemptStarted,
            kind,
            kind=kind,
            stage=point.stage,
            point=point.name,
            config=config,
            retry_override=recorded,
            **fields,
        ),
        warnings=[*([] if warning is None else [warning]), *note],
    )


def _recorded_override(
    state: State,
    config: dict[str, Any] | None,
    override: str | None,
    description: str | None = None,
) -> tuple[str | None, list[str]]:
    """The override to record: only one that actually skipped an R9 refusal (R9)."""
    if override is None:
        return None, []
    needed = (
        config_retry(state, config) if config is not None else idea_retry(state, description or "")
    )
    return (override, []) if needed is not None else (None, [_OVERRIDE_UNUSED])


def mutation_blocker(state: State) -> Refusal | None:
    """Why no mutation may start now (R4-R7), or None."""
    return _first(
        config_stage_blocker(state, "mutation"), pending_blocker(state), point_blocker(state)
    )


def decide_mutation(state: State, command: TryMutation) -> Result:
    """Start a mutation changing exactly one parameter of the best config (R6, R7, R9)."""
    blocker = mutation_blocker(state)
    if blocker is not None:
        return blocker
    param = nonempty(command.param, "the parameter name")
    value = plain(command.value, f"the value of {param}")
    best = state.best
    if best is None:  # the sheet, which sets the first best, precedes every stage
        raise BadInput("no best config to mutate")
    unchanged = unchanged_refusal(state, param, value)
    if unchanged is not None:
        return unchanged
    config = validate_config({**best.config, param: value}, "the mutated config")
    point, policy = _open_point(state), effective_policy(state)
    warning = None
    if point.mutations == 0 and point.candidates < int(policy["candidates_min"]):
        warning = (
            f"point {point.name} ends its candidate phase with {point.candidates} "
            f"candidate{'' if point.candidates == 1 else 's'}, fewer than the "
            f"{policy['candidates_min']} the policy expects (R7)"
        )
    return _start(
        state, command, "mutation", config, "the mutated config", warning, param=param, value=value
    )


def algorithm_blocker(state: State) -> Refusal | None:
    """Why no algorithm change may start now (R5, R6), or None."""
    stage = active_stage(state)
    if stage != "algorithm":
        candidate = Step("candidate", state.op, config=Fill("JSON"), prior=TEXT)
        mutation = Step("try", state.op, change=Fill("PARAM=JSON"))
        return refuse(
            "R5",
            "algorithm changes belong to the algorithm stage only",
            f"current stage: {stage or 'none'}",
            f"stages 1-3 change the config ({candidate} or {mutation})",
        )
    return pending_blocker(state)


def decide_algorithm(state: State, command: TryAlgorithm) -> Result:
    """Start an algorithm change described in words, unless it repeats a failed idea (R5, R9)."""
    blocker = algorithm_blocker(state)
    if blocker is not None:
        return blocker
    description = nonempty(command.description, "the algorithm change's description")
    override = override_reason(command.override)
    refusal = _first(
        same_impl_refusal(state, command.impl_digest, override),
        None if override else idea_retry(state, description),
    )
    if refusal is not None:
        return refusal
    best = state.best
    if best is None:
        raise BadInput("no best config")
    recorded, warnings = _recorded_override(state, None, override, description)
    if not command.impl_digest:
        warnings.append(
            f"no digest of the changed implementation was given ({arg('impl')}): "
            "audit cannot tie the measurement to the code (R5)"
        )
    return accept(
        build(
            AttemptStarted,
            "algorithm change",
            kind="algorithm",
            stage="algorithm",
            point=None,
            config=best.config,
            description=description,
            impl_digest=command.impl_digest,
            retry_override=recorded,
        ),
        warnings=warnings,
    )


def exhaustion(
    state: State, attempt: Attempt, adopted: bool, failure: str | None
) -> PointClosed | None:
    """Close the attempt's point when its no-gain streak reaches the policy's N (R7)."""
    point = state.points.get(attempt.point) if attempt.point else None
    if point is None or not point.is_open or attempt.kind != "mutation":
        return None
    if adopted or failure is not None:
        return None
    limit = patience(effective_policy(state), point.stage)
    if limit is None or point.streak + 1 < limit:
        return None
    return build(
        PointClosed,
        "point close",
        stage=point.stage,
        name=point.name,
        outcome="exhausted",
        reason=f"{limit} consecutive mutations without gain",
    )
