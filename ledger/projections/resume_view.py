"""`resume`: what an interrupted agent must reload and run next, on top of `status`."""

from __future__ import annotations

from typing import Any

from ledger.domain.hints import NAME, TEXT, Fill, Step, arg
from ledger.domain.state import State
from ledger.projections import campaign_end
from ledger.projections.attempt_rows import attempt_row
from ledger.projections.status_view import measure_command, status, status_text


def resume(state: State) -> dict[str, Any]:
    """What an interrupted agent needs: stage, skills to reload, pending attempt, next step."""
    return {**status(state), **resume_fields(state)}


def resume_fields(state: State) -> dict[str, Any]:
    """The fields `resume` adds to `status`."""
    pending = state.attempts.get(state.pending) if state.pending else None
    point = state.points.get(state.open_point) if state.open_point else None
    return {
        "reload_skills": list(state.skills),
        "pending_attempt": attempt_row(pending) if pending else None,
        "point": {
            "name": point.name,
            "streak": point.streak,
            "candidates": point.candidates,
            "mutations": point.mutations,
        }
        if point
        else None,
        "guide": guide(state.op),
        "next": next_steps(state),
    }


def next_steps(state: State) -> list[str]:
    """The ways forward, as the caller runs them: measure (or abandon) a pending attempt, settle
    a merge's conflicts, end a stopped campaign (R10), else the protocol's next steps."""
    from stages.allowed import protocol_steps  # the next steps, not what works at any time
    from stages.conflicts import conflicts

    pending = state.attempts.get(state.pending) if state.pending else None
    op = state.op
    if pending is not None:
        abandon = Step("abandon", op, attempt=pending.id, reason="interrupted")
        return [measure_command(state, pending), f"or, if it cannot be measured: {abandon}"]
    if conflicts(state):  # a merge left the campaign in conflict (DESIGN §8)
        from stages import remeasure

        return [
            remeasure.next_step(state)
            or f"{Step('conflicts', op)} (then resolve each conflict as it says)"
        ]
    if state.stopped:  # its way forward is its end, nothing once handed back
        return campaign_end.end_steps(state)
    return [_next_step(state, name) for name in protocol_steps(state)]


def guide(op: str | None) -> list[str]:
    """How to make and undo an algorithm change and when to open a multi-knob point (R5, R7),
    in the caller's terms: what `resume` teaches an agent that starts cold (issue 28.6)."""
    impl = f"custom/{op}/{op}_impl.py"
    knobs = [Fill("KNOB_A"), Fill("KNOB_B")]
    return [
        f"an algorithm change (algorithm stage only): edit {impl}, then "
        f"{Step('try', op, algorithm=TEXT, impl=impl)} and measure it; after a rollback or "
        f"no-gain, put the best's kernel back ({Step('kernel restore', op)}, or git restore "
        f"{impl}) before the next attempt",
        "knobs that only gain together: open one point for all of them "
        f"({Step('point open', op, name=NAME, knob=knobs)}); its candidates set them together "
        f"and its mutations may change any of them, where a point opened without {arg('knob')} "
        "changes only the knob it is named after",
    ]


# The evidence steps' sources: SPEC.md's own check first; the others only where no verifier is
# declared (where one is, only measured evidence activates, R1, and the others are refused).
_EVIDENCE_NEXT = {
    "evidence compare": ("run", Fill("CMD"), "output", [Fill("NAME=true|false")]),
    "evidence layout": ("run", Fill("CMD"), "exit_code", Fill("N")),
}


def _next_step(state: State, name: str) -> str:
    """An allowed step as a way forward: the evidence with the sources it accepts, any other
    step with what it needs (its other arguments are in the tool's schema, or `--help`)."""
    from stages.policy import declares_verifier

    op = state.op
    if name in _EVIDENCE_NEXT:
        from_spec = Step(name, op, from_spec=True)
        if declares_verifier(state):
            return str(from_spec)
        run, cmd, other, value = _EVIDENCE_NEXT[name]
        return f"{from_spec} (or {arg(run, cmd)}, or {arg(other, value)})"
    return str(Step(name, op, **_REQUIRED.get(name, {})))


# What a step needs besides the op, as placeholders: a bare `relax(op=…)` left an agent to
# guess its arguments from the schema.
_REQUIRED: dict[str, dict[str, Any]] = {
    "relax": {
        "what": Fill("vec|cube"),
        "limit": Fill("LIMIT"),
        "basis": TEXT,
        "evidence": [Fill("ATTEMPT")],
    },
    "skill load": {"name": Fill("SKILL")},
    "skill unload": {"name": Fill("SKILL")},
    "stage enter": {"name": Fill("STAGE")},
    "stage exit": {"name": Fill("STAGE")},
    "point open": {"name": Fill("KNOB")},
    "point close": {"name": Fill("POINT"), "reason": TEXT},
    "candidate": {"config": Fill("CONFIG"), "prior": TEXT},
    "try": {"change": Fill("KEY=VALUE")},
    "fail": {"attempt": "pending", "category": Fill("CATEGORY"), "detail": TEXT},
    "abandon": {"attempt": "pending", "reason": TEXT},
    "verify": {"attempt": "pending"},
    "handback": {"summary": TEXT},
}


def resume_text(data: dict[str, Any]) -> str:
    """`resume` for humans."""
    lines = [status_text(data), "resume:"]
    lines.append(f"  reload skills: {', '.join(data['reload_skills']) or '-'}")
    if data["pending_attempt"]:
        pa = data["pending_attempt"]
        lines.append(f"  in flight: attempt {pa['attempt']} ({pa['kind']}: {pa['change']})")
    if data["point"]:
        p = data["point"]
        lines.append(
            f"  point {p['name']}: streak {p['streak']}, {p['candidates']} candidates,"
            f" {p['mutations']} mutations"
        )
    lines.extend(f"  next: {step}" for step in data["next"])
    lines.extend(f"  guide: {line}" for line in data.get("guide", ()))
    return "\n".join(lines)
