"""R4 Stage order: frontend -> swimlane -> incore -> algorithm, with entry and exit conditions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.domain.hints import TEXT, Step
from ledger.domain.state import State
from ledger.errors import BadInput
from ledger.schema.events import (
    STAGES,
    TUNE_SKILLS,
    ExitCondition,
    Stage,
    StageEntered,
    StageExited,
)
from ledger.schema.vocabulary import ADOPTED
from stages.outcome import Result, accept, refuse
from stages.policy import effective_policy
from stages.refusal import Refusal

if TYPE_CHECKING:  # annotations only: priors and log read these modules, not the commands
    from stages.commands import EnterStage, ExitStage


def known_stage(name: str) -> Stage:
    """`name` when it is a stage, else BadInput."""
    if name not in STAGES:
        raise BadInput(f"unknown stage {name!r}", hint=f"stages: {', '.join(STAGES)}")
    return name


def active_stage(state: State) -> str | None:
    """The stage entered and not yet exited, if any."""
    if state.stage is None or state.stage in state.exited:
        return None
    return state.stage


def next_stage(state: State) -> str | None:
    """The one stage that may be entered next (no skipping, no going back), if any."""
    return STAGES[len(state.entered)] if len(state.entered) < len(STAGES) else None


def target_met(state: State) -> bool:
    """True when the best time is at or below the target (R4, R10)."""
    return (
        state.target is not None
        and state.best is not None
        and (state.best.time_us <= state.target.target_us)
    )


def utilization_met(util_pct: float | None, bubble_pct: float | None, state: State) -> bool:
    """True when utilization is above and bubble rate below the policy limits (R4, R10)."""
    policy = effective_policy(state)
    return (
        util_pct is not None
        and bubble_pct is not None
        and util_pct > float(policy["util_stop_pct"])
        and bubble_pct < float(policy["bubble_stop_pct"])
    )


def entry_blocker(state: State, stage: str) -> Refusal | None:
    """Why `stage` may not be entered now (R2, R3, R4), or None."""
    if stage in state.entered:
        return refuse(
            "R4",
            f"stage {stage} was already entered: no going back",
            f"stages entered: {', '.join(state.entered)}",
            "continue in the current stage or exit it",
        )
    expected = next_stage(state)
    if stage != expected:
        return refuse(
            "R4",
            f"stage {stage} would skip {expected}: stages go " + " -> ".join(STAGES),
            f"the next stage is {expected}",
            f"enter {expected} first ({Step('stage enter', state.op, name=expected)})",
        )
    if state.target is None:
        return refuse(
            "R3",
            f"stage {stage} needs the Performance target sheet",
            "no target sheet is recorded",
            f"write it: {Step('target', state.op, from_spec=True)} (or give baseline, shape, "
            "target and target_source)",
        )
    previous = STAGES[STAGES.index(stage) - 1] if stage != STAGES[0] else None
    if previous is not None and previous not in state.exited:
        return refuse(
            "R4",
            f"stage {stage} needs {previous} exited",
            f"{previous} is current",
            f"exit {previous} when an exit condition holds "
            f"({Step('stage exit', state.op, name=previous)})",
        )
    loaded = [s for s in state.skills if s in TUNE_SKILLS]
    if loaded:
        return refuse(
            "R2",
            f"unload {loaded[0]} before entering {stage}",
            f"{loaded[0]} is loaded",
            str(Step("skill unload", state.op, name=loaded[0])),
        )
    if stage == "algorithm":
        return _algorithm_blocker(state)
    return None


def _algorithm_blocker(state: State) -> Refusal | None:
    if not state.report_after_incore:
        return refuse(
            "R4",
            "the algorithm stage needs a tuning report generated after incore exited",
            "no report since incore exited",
            str(Step("report", state.op)),
        )
    if target_met(state):
        return refuse(
            "R4",
            "the algorithm stage is only for a target still unmet",
            "the best already meets the target",
            "stop the campaign",
        )
    return None


def decide_enter(state: State, command: EnterStage) -> Result:
    """Enter the next stage when its entry conditions hold (R4)."""
    stage = known_stage(command.stage)
    blocker = entry_blocker(state, stage)
    if blocker is not None:
        return blocker
    return accept(StageEntered(stage=stage))


def ideas_without_gain(state: State) -> int:
    """Algorithm attempts finished without gain since the last adopted one (R4)."""
    count = 0
    for attempt in reversed(state.attempts.values()):
        if attempt.kind != "algorithm" or attempt.status not in ("verified", "failed"):
            continue
        if attempt.verdict in ADOPTED:
            break
        count += 1
    return count


def report_covers_attempts(state: State) -> bool:
    """True when a report was generated after the latest attempt started (R4 hand-back)."""
    return state.attempts_at_report == len(state.attempts)


def exit_condition(
    state: State, stage: str, by_user: bool, hand_back: bool = False
) -> ExitCondition | None:
    """The exit condition that holds for the current `stage`, if any (R4)."""
    if by_user:
        return "user"
    if target_met(state):
        return "target-met"
    if stage == "algorithm":
        if hand_back and report_covers_attempts(state):
            return "hand-back"
        limit = int(effective_policy(state)["algorithm_patience"])
        return "ideas-exhausted" if ideas_without_gain(state) >= limit else None
    best = state.best.measurement if state.best else None
    if (
        stage == "incore"
        and best is not None
        and utilization_met(best.util_pct, best.bubble_pct, state)
    ):
        return "utilization"
    points = [p for p in state.points.values() if p.stage == stage]
    if points and not any(p.is_open for p in points):
        return "points-closed"
    return None


def exit_blocker(
    state: State, stage: str, by_user: bool, hand_back: bool = False
) -> Refusal | None:
    """Why the current `stage` may not be exited now (R4), or None."""
    current = active_stage(state)
    if stage != current:
        return refuse(
            "R4",
            f"stage {stage} is not the current stage",
            f"current stage: {current or 'none'}",
            "exit only the current stage",
        )
    if state.pending is not None:
        return refuse(
            "R4",
            f"stage {stage} cannot be exited with an attempt pending",
            f"attempt {state.pending} is pending",
            f"verify, fail or abandon attempt {state.pending}",
        )
    if state.open_point is not None:
        return refuse(
            "R4",
            f"point {state.open_point} is still open",
            f"point {state.open_point} is open",
            f"close it first ({Step('point close', state.op, name=state.open_point, reason=TEXT)})",
        )
    if stage == "algorithm" and exit_condition(state, stage, by_user, hand_back) is None:
        return _algorithm_exit_refusal(state, hand_back)
    if exit_condition(state, stage, by_user, hand_back) is None:
        held = (
            "no optimization point was opened"
            if not any(p.stage == stage for p in state.points.values())
            else "the target is not met"
        )
        policy = effective_policy(state)
        incore = (
            f"; core utilization > {policy['util_stop_pct']}% and bubble rate < "
            f"{policy['bubble_stop_pct']}% on the best measurement"
            if stage == "incore"
            else ""
        )
        return refuse(
            "R4",
            f"no exit condition of {stage} holds",
            held,
            "exit when the target is met; every point opened in the stage is closed"
            f"{incore}; or the user says stop "
            f"({Step('stage exit', state.op, name=stage, user_stop=True)})",
        )
    return None


def algorithm_step(state: State) -> str:
    """How an algorithm change is made: edit the impl, then `try` it with its file (R5)."""
    impl = f"custom/{state.op}/{state.op}_impl.py"
    return f"edit {impl}, then {Step('try', state.op, algorithm=TEXT, impl=impl)}"


def _algorithm_exit_refusal(state: State, hand_back: bool) -> Refusal:
    limit = int(effective_policy(state)["algorithm_patience"])
    streak = ideas_without_gain(state)
    if hand_back:
        return refuse(
            "R4",
            "a hand-back needs the tuning report of every attempt",
            "no report was generated since the latest attempt started",
            f"generate it ({Step('report', state.op)}), then "
            f"{Step('stage exit', state.op, name='algorithm', hand_back=True)}",
        )
    return refuse(
        "R4",
        "no exit condition of algorithm holds",
        f"the target is not met; {streak} of {limit} consecutive algorithm attempts "
        "without gain (policy algorithm_patience)",
        f"try another idea ({algorithm_step(state)}); or hand back with the report "
        f"({Step('report', state.op)}, then "
        f"{Step('stage exit', state.op, name='algorithm', hand_back=True)}); or the user says "
        f"stop ({Step('stage exit', state.op, name='algorithm', user_stop=True)})",
    )


def decide_exit(state: State, command: ExitStage) -> Result:
    """Exit the current stage under the exit condition that holds (R4)."""
    stage = known_stage(command.stage)
    blocker = exit_blocker(state, stage, command.by_user, command.hand_back)
    if blocker is not None:
        return blocker
    condition = exit_condition(state, stage, command.by_user, command.hand_back)
    if condition is None:  # exit_blocker refuses this case; kept for the type checker
        raise BadInput(f"no exit condition of {stage} holds")
    return accept(StageExited(stage=stage, condition=condition, reason=command.reason))
