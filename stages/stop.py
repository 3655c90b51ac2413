"""R10 Stop: target reached, utilization limit, or the user; afterwards tuning steps are refused,
the result is handed back with a report, and the user may lift a utilization stop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.domain.hints import TEXT, Step, named
from ledger.domain.state import State
from ledger.schema.events import (
    AttemptAbandoned,
    CampaignHandedBack,
    CampaignResumed,
    CampaignStopped,
    Payload,
)
from stages import budget
from stages.outcome import Result, accept, nonempty, refuse
from stages.person import person_name, person_refusal
from stages.pipeline import utilization_met
from stages.policy import effective_policy
from stages.refusal import Refusal

if TYPE_CHECKING:
    from stages.commands import HandBack, ResumeCampaign, Stop

USER_STOP_ABANDON = "the user stopped the campaign"


def stopped_refusal(state: State) -> Refusal | None:
    """Refuse a tuning step once the campaign has stopped (R10, exit 6)."""
    if state.stopped is None:
        return None
    detail = f": {state.stop_detail}" if state.stop_detail else ""
    return refuse(
        "R10",
        "the campaign has stopped; tuning steps are refused",
        f"stopped ({state.stopped}){detail}",
        _after_stop_hint(state),
        kind="stopped",
    )


def utilization_stop(
    state: State, util_pct: float | None, bubble_pct: float | None
) -> CampaignStopped | None:
    """The stop a newly adopted best triggers when util and bubble pass the limits (R10)."""
    if not utilization_met(util_pct, bubble_pct, state):
        return None
    policy = effective_policy(state)
    if state.stage not in policy["utilization_stop_stages"]:
        return None
    return CampaignStopped(
        reason="utilization",
        detail=f"the best has core utilization {util_pct}% > {policy['util_stop_pct']}% "
        f"({policy['utilization_stop_scope']}) and bubble rate {bubble_pct}% < "
        f"{policy['bubble_stop_pct']}%",
    )


def decide_stop(state: State, command: Stop) -> Result:
    """Stop the campaign at the user's request; a pending attempt is abandoned with it (R10)."""
    reason = nonempty(command.reason, "the reason to stop")
    events: list[Payload] = [CampaignStopped(reason="user", detail=reason)]
    if state.pending is not None:
        # Left pending, the attempt could never be closed: every step after a stop is refused.
        events.append(AttemptAbandoned(attempt=state.pending, reason=USER_STOP_ABANDON))
    return accept(*events)


# --- after a stop: the hand-back (R10) and lifting a utilization stop ------------------------


def end_steps(state: State) -> list[str]:
    """The commands that end a stopped campaign, in order: the report, the hand-back, and for
    a utilization stop the user's way to go on (R10); none before a stop or after the hand-back."""
    if state.stopped is None or state.handback is not None:
        return []
    op = state.op
    steps = [] if state.stop_report is not None else [str(Step("report", op))]
    steps.append(str(Step("handback", op, summary=TEXT)))
    if state.stopped == "budget":
        steps.append(
            "or, if a person decides to go on: "
            + budget.raise_hint(op or "OP", effective_policy(state), budget.spent(state))
        )
    if state.stopped == "utilization":
        steps.append(
            f"or, if a person decides to go on: tune-ledger resume-campaign {op} --person NAME "
            "--reason TEXT"
        )
    return steps


# What still works after a stop, besides ending it (R10): notes, policies, and the reads.
_STILL = ("note", "policy", "status", "log", "audit")


def after_stop(state: State) -> list[str]:
    """The steps allowed after a stop (status `allowed`, R10): the report, the hand-back once
    a report was generated since the stop, the user's lifting of a utilization stop, notes,
    policies and the reads."""
    open_end = state.handback is None
    names = ["report"]
    if open_end and state.stop_report is not None:
        names.append("handback")
    if open_end and state.stopped == "utilization":
        names.append("resume-campaign")
    return [*names, *_STILL]


def _after_stop_hint(state: State) -> str:
    """What a stopped campaign still needs, as the next step of a refusal (R10)."""
    steps = end_steps(state)
    if not steps:
        return f"nothing to tune: {', '.join(named(n) for n in after_stop(state))} still work"
    first = [s for s in steps if not s.startswith("or, ")]
    rest = [s for s in steps if s.startswith("or, ")]
    return (
        "hand the result back to the orchestrator: "
        + ", then ".join(first)
        + "".join(f"; {s}" for s in rest)
    )


def decide_handback(state: State, command: HandBack) -> Result:
    """Record the hand-back of a stopped campaign with the report generated since the stop (R10)."""
    op = state.op
    if state.stopped is None:
        return refuse(
            "R10",
            "nothing to hand back: the campaign has not stopped",
            f"stage {state.stage or '-'} is in progress and no stop condition holds",
            f"tune on ({Step('status', op)} lists the steps allowed now), or stop it: "
            f"{Step('stop', op, reason=TEXT)}",
        )
    if state.handback is not None:
        return refuse(
            "R10",
            "the result was already handed back to the orchestrator",
            f"handed back with {state.handback['report']}",
            _after_stop_hint(state),
            kind="stopped",
        )
    if state.stop_report is None:
        return refuse(
            "R10",
            "a hand-back carries the tuning report of the campaign as it ended",
            f"no report was generated since the campaign stopped ({state.stopped})",
            f"{Step('report', op)}, then {Step('handback', op, summary=TEXT)}",
        )
    return accept(
        CampaignHandedBack(stop=state.stopped, report=state.stop_report, summary=command.summary)
    )


def decide_resume(state: State, command: ResumeCampaign) -> Result:
    """Lift a utilization stop, or a budget stop once the budget no longer holds, by a person's
    recorded decision (DESIGN §3.3); no other stop lifts (R10)."""
    reason = nonempty(command.reason, "the user's reason to go on")
    op = state.op
    if state.stopped == "budget" and state.handback is None:
        return _resume_budget(state, command, reason)
    if state.stopped is None:
        return refuse(
            "R10",
            "nothing to resume: the campaign has not stopped",
            f"stage {state.stage or '-'} is in progress",
            f"tune on: {Step('status', op)} lists the steps allowed now",
        )
    if state.handback is not None or state.stopped != "utilization":
        detail = f": {state.stop_detail}" if state.stop_detail else ""
        blocking = (
            f"the result was handed back with {state.handback['report']}"
            if state.handback is not None
            else f"the campaign stopped ({state.stopped}){detail}"
        )
        return refuse(
            "R10",
            "only a utilization stop not yet handed back can be lifted",
            blocking,
            _after_stop_hint(state),
            kind="stopped",
        )
    person = person_name(command.person)
    if person is None and not command.legacy:
        # Going past a stop is a person's decision (DESIGN §3.3), never the agent's.
        return person_refusal("R10", "resume-campaign", ["resume-campaign", op or "OP"])
    return accept(CampaignResumed(lifted=state.stop_detail, reason=reason, person=person))


def _resume_budget(state: State, command: ResumeCampaign, reason: str) -> Result:
    """A person lifts a budget stop: named, and only once the budgets no longer hold (R10)."""
    op = state.op or "OP"
    policy = effective_policy(state)
    used = budget.spent(state)
    person = person_name(command.person)
    if person is None and not command.legacy:
        # The same person rule as every lowered guard (stages/person.py), with the budget's
        # own next step: raise it first, then resume.
        return refuse(
            "R10",
            "only a person lifts a budget stop, with their name and reason",
            f"the campaign stopped ({state.stop_detail}); no person was named",
            budget.raise_hint(op, policy, used) + " (an agent never lifts a budget)",
        )
    still = budget.reached(policy, used)
    if still:
        return refuse(
            "R10",
            "the budget still holds: lifting the stop would stop the next result again",
            "; ".join(still),
            budget.raise_hint(op, policy, used),
        )
    return accept(CampaignResumed(lifted=state.stop_detail, reason=reason, person=person))
