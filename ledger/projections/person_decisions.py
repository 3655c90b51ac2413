"""The person's decisions a ledger holds, as MEMORY.md's header and the report show them first
(DESIGN §3.3): each guard a person lowered, by name and with the reason, and the guards that
stand lowered now."""

from __future__ import annotations

from ledger.domain.state import PersonAct, State
from stages.person import person_decisions, person_label
from stages.policy import lowered_guards


def person_lines(state: State) -> list[str]:
    """One Markdown bullet per person's decision, in ledger order (empty: none recorded)."""
    return [f"- {person_text(d)} (event `{d.event[:12]}`)" for d in person_decisions(state)]


def person_text(decision: PersonAct) -> str:
    """One person's decision as plain text: what was decided, by whom, and why (the dashboard
    shows the same words as MEMORY.md and the report)."""
    reason = _one_line(decision.reason) or "(no reason)"
    return f"{decision.what}: {person_label(decision.person)}, because {reason}"


def person_block(state: State) -> str:
    """MEMORY.md's block of person decisions and lowered guards ('' when there are none)."""
    lines = person_lines(state)
    lowered = lowered_guards(state)
    if not lines and not lowered:
        return ""
    out = ["", "**Person decisions** (a guard lowered by a person, DESIGN §3.3):", ""]
    out += lines or ["- none recorded"]
    if lowered:
        out += ["", f"Guards lowered now: {'; '.join(lowered)}."]
    return "\n".join(out) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())
