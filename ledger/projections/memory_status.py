"""MEMORY.md's Tuning status: where the campaign stands, as the deciders see it.

Stage, skills, pending attempt, best, target, stop, optimization points and alternates
(R2, R4, R6, R7, R10); the limits shown (patience, alternates, stop thresholds) come from
`stages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.domain.state import State
from ledger.projections.attempt_markdown import (
    CELL,
    change_text,
    counts_text,
    point_cell,
    points_table,
    policy_number,
    time_text,
)
from ledger.projections.conflicts import texts as conflict_texts
from ledger.projections.formatting import (
    change_pct,
    fmt_pct,
    fmt_speedup,
    fmt_time_us,
    md_code,
    md_json,
    md_table,
    md_text,
    plural,
    short_digest,
    with_legend,
)
from ledger.projections.memory_layout import heading, join_blocks
from ledger.projections.timeline import Step, config_diff
from ledger.schema.events import STAGES
from stages.alternates import alternate_candidates
from stages.binding import best_impl_digest
from stages.policy import policy_overrides, policy_value
from stages.skills import MAX_BASE, MAX_TUNE

# Bounds that keep the section short however long the campaign runs.
POINT_ROWS = 15
CONFIG = 600  # characters of the best config shown


def render_status(state: State, policy: Mapping[str, Any], op: str = "OP") -> str:
    """Tuning status: stage, skills, pending attempt, best, target, stop, points, alternates."""
    parts = [heading("status")]
    lines = [
        f"- Stages: {_stages_text(state)}",
        "- Skills loaded: "
        + (", ".join(md_code(s, 40) for s in state.skills) or "none")
        + f" (at most {MAX_BASE} base + {MAX_TUNE} tune skill, R2)",
        f"- Pending attempt: {_pending_text(state)}",
        f"- Best: {_best_text(state)}",
        f"- Target: {_target_text(state)}",
        f"- Stop: {_stop_text(state, policy)}",
        f"- Attempts: {counts_text(state)}",
    ]
    if state.best is not None:
        lines.append(f"- Best config: {md_json(state.best.config, CONFIG, in_table=False)}")
        lines.append(f"- Best kernel: {best_kernel_text(state)}")
    lines.extend(
        f"- Policy {md_code(o['key'], 40)} = {md_json(o['value'], 120, in_table=False)} "
        f"(default {md_json(o['default'], 120, in_table=False)}): "
        f"{md_text(o['reason'] or 'no reason recorded', 300)}"
        for o in policy_overrides(state)
    )
    if len(state.manifests) > 1:
        lines.append(
            "- **Manifest changed** during the campaign: "
            + " → ".join(md_code(d[:12]) for d in state.manifests)
            + " (SPEC.md's front matter; verdicts compare only measurements of one verifier, R8)"
        )
    if state.overrides:
        lines.append(
            f"- Retry overrides (R9): {len(state.overrides)}, listed by `tune-ledger audit {op}`"
        )
    if state.repairs:
        lines.append(
            f"- Ledger repairs: {plural(len(state.repairs), 'torn tail')} quarantined "
            f"(see `tune-ledger audit {op}`)"
        )
    lines.extend(f"- **Merge conflict**: {md_text(c, 200)}" for c in conflict_texts(state))
    lines.append(f"- Next: `tune-ledger resume {op}` lists the steps allowed now.")
    parts.append("\n".join(lines) + "\n")
    parts.append("### Optimization points\n\n" + points_table(state, policy, POINT_ROWS))
    parts.append(_alternates_table(state, policy))
    return join_blocks(parts)


def _stages_text(state: State) -> str:
    if not state.entered:
        return "none entered yet (frontend → swimlane → incore → algorithm, R4)"
    items = []
    for stage in state.entered:
        if stage in state.exited:
            items.append(f"{stage} (exited: {md_text(state.exited[stage])})")
        elif state.stopped is not None:
            # A stopped campaign has no current stage: every step is refused (R10).
            items.append(f"{stage} (campaign stopped)")
        else:
            items.append(f"**{stage}** (current)")
    return " → ".join(items)


def _pending_text(state: State) -> str:
    if state.pending is None:
        return "none"
    attempt = state.attempts.get(state.pending)
    if attempt is None:
        return md_code(state.pending)
    step = Step(attempt, state.best.config if state.best else {}, None)
    where = f" in point {point_cell(attempt.point)}" if attempt.point else ""
    return (
        f"{md_code(attempt.id)}: {attempt.kind} {change_text(step)}{where}; verify, fail "
        "or abandon it before anything else (R6)"
    )


def _best_text(state: State) -> str:
    best = state.best
    if best is None:
        return "none yet (the baseline becomes the first best when the target sheet is written)"
    source = f"attempt {md_code(best.attempt)}" if best.attempt else "the baseline"
    text = f"**{fmt_time_us(best.time_us)}** from {source}"
    if state.target is not None and best.attempt:
        speedup = fmt_speedup(state.target.baseline_us / best.time_us)
        text += f", a speed-up of {speedup} over the baseline"
    m = best.measurement
    metrics = [
        f"{label} {fmt_pct(value)}"
        for label, value in (("core utilization", m.util_pct), ("bubble rate", m.bubble_pct))
        if value is not None
    ]
    return text + "".join(f"; {metric}" for metric in metrics)


def best_kernel_text(state: State) -> str:
    """The kernel the best was measured with and its accuracy evidence: the best's own
    measurement, and the E2E compare when one was recorded for this kernel (R1, R8)."""
    best = state.best
    if best is None:
        return "none yet"
    kernel = best_impl_digest(state)
    changed = next(
        (a for a in reversed([state.attempts[i] for i in state.adopted]) if a.impl_digest),
        None,
    )
    origin = (
        f"from algorithm change {md_code(changed.id)}"
        if changed is not None
        else "the activated kernel"
    )
    text = f"{md_code(short_digest(kernel))} ({origin})"
    m = best.measurement
    if best.attempt:
        outputs = "all outputs all_close" if m.all_close else "**outputs NOT all_close**"
        text += f"; its measurement: {outputs}, layout exit {m.layout_exit} ({m.origin_level})"
    compare = state.compare
    if compare is not None and compare.impl_digest == kernel:
        diffs = ", ".join(
            f"{md_text(str(o.get('name')), 40)} "
            + ("all_close" if o.get("all_close") else "NOT all_close")
            + (
                f" (max diff {o['max_diff']:g})"
                if isinstance(o.get("max_diff"), int | float)
                else ""
            )
            for o in compare.outputs
        )
        text += f"; E2E compare of this kernel: {diffs or 'recorded'} ({compare.origin_level})"
    else:
        text += "; no E2E compare recorded for this kernel"
    return text


def _target_text(state: State) -> str:
    sheet = state.target
    if sheet is None:
        return "not set (no target sheet)"
    text = fmt_time_us(sheet.target_us)
    if state.best is None:
        return text
    best = state.best.time_us
    gap = change_pct(best, sheet.target_us)
    if best <= sheet.target_us:
        return f"{text}, **met** (best is {fmt_pct(-gap)} below it)"
    return (
        f"{text}, not met: best is {fmt_pct(gap)} above it (a further "
        f"{fmt_speedup(best / sheet.target_us)} is needed)"
    )


def _stop_text(state: State, policy: Mapping[str, Any]) -> str:
    if state.stopped is None:
        util = policy_number(policy, "util_stop_pct")
        bubble = policy_number(policy, "bubble_stop_pct")
        return (
            f"running; tuning stops when the target is met, when core utilization > "
            f"{util:g}% and bubble rate < {bubble:g}%{_utilization_stages(policy)}, "
            f"{_budgets_text(state, policy)}or when the user stops it (R10)"
        )
    detail = f": {md_text(state.stop_detail, 200)}" if state.stop_detail else ""
    return f"**stopped ({md_text(state.stopped)})**{detail}; further tuning steps are refused"


def _budgets_text(state: State, policy: Mapping[str, Any]) -> str:
    """The budgets in force and what the campaign used of each (R10); empty when none is set."""
    from stages import budget

    limits = budget.budgets(policy)
    if not limits:
        return ""
    used = budget.spent(state)
    parts = []
    for key, limit in limits.items():
        amount = used.of(key)
        shown = "?" if amount is None else f"{amount:g}"
        parts.append(f"{shown} of {limit:g} ({key})")
    return f"when a budget runs out (used: {', '.join(parts)}), "


def _utilization_stages(policy: Mapping[str, Any]) -> str:
    """Where the utilization stop is judged, when the policy narrows it to some stages (R10)."""
    judged = policy_value(policy, "utilization_stop_stages")
    if not isinstance(judged, list) or set(STAGES) <= set(judged):
        return ""
    return f" (judged in {', '.join(judged)} only)" if judged else " (judged in no stage)"


def _alternates_table(state: State, policy: Mapping[str, Any]) -> str:
    chosen = alternate_candidates(state, policy)
    if not chosen:
        return ""
    best_config = state.best.config if state.best else {}
    best_us = state.best.time_us if state.best else None
    rows = []
    for attempt in chosen:
        step = Step(attempt, best_config, best_us)
        rows.append(
            [
                md_code(attempt.id),
                point_cell(attempt.point),
                time_text(step),
                md_code(config_diff(best_config, attempt.config), CELL),
            ]
        )
    return (
        "### Alternates\n\nThe best valid candidates besides the best (R7), as changes to "
        "the best config:\n\n"
        + with_legend(md_table(["attempt", "point", "time (vs best)", "config vs best"], rows))
    )
