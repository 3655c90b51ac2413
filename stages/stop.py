"""R10 Stop: target reached, utilization limit, or the user; afterwards tuning steps are refused."""

from __future__ import annotations

from ledger.domain.state import State
from ledger.schema.events import AttemptAbandoned, CampaignStopped, Payload
from stages.commands import Stop
from stages.outcome import Result, accept, nonempty, refuse
from stages.pipeline import utilization_met
from stages.policy import effective_policy
from stages.refusal import Refusal

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
        "nothing to tune: status, log, report, audit, note and policy still work",
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
