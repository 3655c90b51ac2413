"""What status and resume say at a campaign's end (R10) and which implementation the file on
disk must hold (R6); they feed status_view.py and resume_view.py."""

from __future__ import annotations

from typing import Any

from ledger.domain.state import State
from ledger.projections.formatting import fmt_time_us


def end_steps(state: State) -> list[str]:
    """The commands that end a stopped campaign (stages.stop.end_steps, R10)."""
    from stages.stop import end_steps as steps

    return steps(state)


def campaign_end(state: State) -> dict[str, Any] | None:
    """A stopped campaign: its stop, the report since, the hand-back, what is left (R10)."""
    if state.stopped is None:
        return None
    return {
        "stopped": state.stopped,
        "detail": state.stop_detail,
        "report": state.stop_report,
        "handed_back": state.handback,
        "next": end_steps(state),
    }


def impl_expected(state: State) -> str | None:
    """The implementation digest the file on disk must have now (R6): the pending attempt's,
    else the best's; the shell compares it with the file (`status` warns when they differ)."""
    from stages.binding import best_impl_digest, expected_impl_digest

    pending = state.attempts.get(state.pending) if state.pending else None
    return expected_impl_digest(state, pending) if pending else best_impl_digest(state)


def end_lines(data: dict[str, Any]) -> list[str]:
    """What a stopped campaign says: why it stopped, its report, the hand-back (R10)."""
    end = data.get("campaign_end")
    if not end:
        return []
    best = data["best"]["time_us"] if data["best"] else None
    if end["stopped"] == "target-reached":
        lines = [
            f"  the campaign reached its target: best {fmt_time_us(best)} <= target "
            f"{fmt_time_us(data['target_us'])}"
        ]
    else:
        who = {"utilization": "on utilization", "budget": "on its budget"}.get(
            end["stopped"], "by the user"
        )
        lines = [f"  the campaign stopped {who}: {end['detail'] or 'no detail recorded'}"]
    handed = end["handed_back"]
    if handed:
        summary = f": {handed['summary']}" if handed["summary"] else ""
        lines.append(f"  handed back to the orchestrator with {handed['report']}{summary}")
    else:
        report = end["report"] or "none generated since the stop"
        lines.append(f"  report: {report}")
        lines.extend(f"  to end it: {step}" for step in end["next"])
    return lines
