"""The bodies of MEMORY.md's managed sections, rendered from the replayed state (DESIGN §4).

`render_sections` is a pure function of the state and the effective policy: one body per
section, LF line ends. Output is deterministic and bounded: long lists show their most recent
rows and summarise the rest, pointing at `tune-ledger log`. Putting the bodies into the file,
under a header that records where they came from, is `memory_file`'s part.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ledger.domain.state import Evidence, State
from ledger.projections.attempt_markdown import (
    CELL,
    change_text,
    counts_text,
    failed_groups,
    point_cell,
    points_table,
    policy_number,
    reason_text,
    time_text,
)
from ledger.projections.formatting import (
    change_pct,
    fmt_pct,
    fmt_sci,
    fmt_speedup,
    fmt_time_us,
    md_code,
    md_json,
    md_table,
    md_text,
    plural,
    short_digest,
    short_id,
)
from ledger.projections.timeline import (
    Step,
    baseline_config,
    config_diff,
    is_failed,
    outcome,
    steps,
)
from stages.search import alternate_candidates
from stages.target import (
    CUBE_TABLE,
    VEC_DESIGN_RANGE,
    VEC_LIMIT,
    CubeRow,
    cube_table_row,
    latest_relaxation,
)

SECTION_ORDER = ("header", "activation", "target-sheet", "status", "adopted", "failed", "history")
TITLES = {
    "header": "tune-ledger header",
    "activation": "Activation evidence",
    "target-sheet": "Performance target sheet",
    "status": "Tuning status",
    "adopted": "Adopted changes",
    "failed": "Failed attempts — do not retry",
    "history": "Recent history",
}

# Bounds that keep MEMORY.md short enough for an agent's context however long the campaign
# runs (1,000 attempts stay under 32 KB); the full history stays in the ledger.
FAILED_ROWS = 25
ADOPTED_ROWS = 20
HISTORY_ROWS = 10
POINT_ROWS = 15
NOTES = 5
CONFIG = 600  # characters of the best config shown in status

TARGET_SOURCES = {
    "spec": "the SPEC.md performance budget",
    "upstream": "a measured comparable upstream kernel",
    "torch-eager": "measured torch eager on the NPU",
}
# What may stand for the op in the header and in the commands shown (one token, no spaces).
_OP_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def render_sections(state: State, policy: Mapping[str, Any]) -> dict[str, str]:
    """The bodies of the managed sections (all but the header) for `state`, LF line ends."""
    op = op_name(state.op)
    walk = steps(state)
    bodies = {
        "activation": render_activation(state, op),
        "target-sheet": render_target_sheet(state, op),
        "status": render_status(state, policy, op),
        "adopted": render_adopted(state, op, walk),
        "failed": render_failed(state, op, walk),
        "history": render_history(state, op, walk),
    }
    return {name: _ending(body) for name, body in bodies.items()}


def _ending(body: str) -> str:
    return body.rstrip("\n") + "\n"


def op_name(op: str | None) -> str:
    """The op as MEMORY.md names it: unsafe characters become `_`, no op is `OP`."""
    return _OP_SAFE.sub("_", op) if op else "OP"


def _heading(name: str) -> str:
    return f"## {TITLES[name]}\n"


def _blocks(parts: Sequence[str]) -> str:
    """Markdown blocks separated by one blank line, ending in one newline."""
    return "\n".join(part.rstrip("\n") + "\n" for part in parts if part)


def render_activation(state: State, op: str = "OP") -> str:
    """Activation evidence: the latest compare and layout checks and the gate's result (R1)."""
    parts = [_heading("activation")]
    if state.activated:
        parts.append(
            "Activation **passed** for implementation "
            f"{md_code(short_digest(state.activation_digest))}: every output all_close and "
            "layout check exit 0 (R1)."
        )
    elif state.handed_back:
        problems = "; ".join(md_text(p, 200) for p in state.activation_problems) or "-"
        parts.append(
            "Activation **failed**; control went back to pypto-op-orchestrator (exit 5). "
            f"Problems: {problems}. Nothing else may happen until it passes (R1)."
        )
    else:
        parts.append(
            "Activation has **not passed** yet. Record an E2E tensor compare "
            f"(`tune-ledger evidence compare {op} --output NAME=true|false`) and a layout check "
            f"(`tune-ledger evidence layout {op} --exit-code N`), then `tune-ledger activate {op}` "
            "(R1). No skill may be loaded before it passes (R2)."
        )
    rows = [
        _evidence_row("E2E tensor compare", state.compare, state),
        _evidence_row("layout check", state.layout, state),
    ]
    parts.append(
        md_table(["check", "result", "implementation", "detail", "event", "provenance"], rows)
    )
    return _blocks(parts)


def _evidence_row(check: str, evidence: Evidence | None, state: State) -> list[str]:
    if evidence is None:
        return [check, "missing", "-", "-", "-", "-"]
    digest = md_code(short_digest(evidence.impl_digest))
    implementation = f"{md_code(evidence.impl_path, 60)} {digest}"
    if state.activation_digest and evidence.impl_digest != state.activation_digest:
        implementation += " (older implementation: does not count)"
    if evidence.exit_code is not None and not evidence.outputs:
        detail = f"exit {evidence.exit_code}"
    else:
        detail = _outputs_text(evidence.outputs)
    return [
        check,
        "pass" if evidence.passed else "**FAIL**",
        implementation,
        detail,
        md_code(short_id(evidence.event)),
        md_text(evidence.origin_level),
    ]


def _outputs_text(outputs: Sequence[Mapping[str, Any]]) -> str:
    if not outputs:
        return "-"
    failing = [o for o in outputs if not o.get("all_close")]
    if len(outputs) > 6:
        if not failing:
            return f"all {len(outputs)} outputs all_close"
        names = ", ".join(md_code(str(o.get("name")), 30) for o in failing[:6])
        return f"{len(failing)} of {len(outputs)} outputs not all_close: {names}"
    items = []
    for output in outputs:
        close = "true" if output.get("all_close") else "false"
        item = f"{md_code(str(output.get('name')), 30)}: all_close {close}"
        max_diff = output.get("max_diff")
        if isinstance(max_diff, int | float):
            item += f", max diff {fmt_sci(float(max_diff))}"
        items.append(item)
    return "; ".join(items)


def render_target_sheet(state: State, op: str = "OP") -> str:
    """The Performance target sheet: baseline, target, speed-up, tile limits, relaxations (R3)."""
    parts = [_heading("target-sheet")]
    sheet = state.target
    if sheet is None:
        parts.append(
            "Not written yet. On first activation write it before any tune skill is loaded or "
            f"any stage entered (R3): `tune-ledger target {op} --baseline TIME --shape SHAPE "
            "--target TIME --target-source spec|upstream|torch-eager`."
        )
        return _blocks(parts)
    tool = md_code(sheet.tool, 60) if sheet.tool else "a tool not recorded"
    reference = f" ({md_text(sheet.source_ref, CELL)})" if sheet.source_ref else ""
    vec = _vec_limit(state)
    rows = [
        [
            "Baseline",
            fmt_time_us(sheet.baseline_us),
            f"measured on the P0 shape {md_code(sheet.shape, 60)} with {tool} "
            f"(provenance: {md_text(sheet.origin_level)})",
        ],
        [
            "Target",
            fmt_time_us(sheet.target_us),
            f"{TARGET_SOURCES.get(sheet.target_source, md_text(sheet.target_source))}{reference}; "
            "precedence: SPEC budget, else upstream kernel, else torch eager",
        ],
        [
            "Required speedup",
            fmt_speedup(sheet.required_speedup),
            "Baseline / Target: how many times faster the kernel must become (the seed's "
            '"Target / Baseline" is inverted)',
        ],
        ["Metric", md_text(sheet.metric, 60), "the execution time every verdict compares"],
        [
            "Vec tile upper limit",
            vec,
            f"each vec tile axis; design range [{VEC_DESIGN_RANGE[0]}, {VEC_DESIGN_RANGE[1]}]",
        ],
        ["Cube tile shapes", _cube_limit(state), "M-based table (`[mL0,mL1]` etc.)"],
    ]
    parts.append(md_table(["field", "value", "source"], rows))
    if not state.relaxations:
        parts.append(
            "Relaxations: none. A config beyond an unrelaxed limit is refused (R3); relax a "
            f"limit only with its basis in profiling data: `tune-ledger relax {op} --what "
            "vec|cube --limit VALUE --basis TEXT`."
        )
    else:
        parts.append("Relaxations, each with its basis (R3):\n")
        parts.append(
            md_table(
                ["#", "tile", "new limit", "basis", "event"],
                [
                    [
                        str(i),
                        md_text(r.what),
                        md_json(r.limit, 60),
                        md_text(r.basis, 200),
                        md_code(short_id(r.event)),
                    ]
                    for i, r in enumerate(state.relaxations, 1)
                ],
                align="rllll",
            )
        )
    return _blocks(parts)


def _vec_limit(state: State) -> str:
    relaxed = latest_relaxation(state, "vec")
    if relaxed:
        return f"relaxed: {md_json(relaxed.limit, 60)} (see the relaxations below)"
    return f"≤ {VEC_LIMIT} per axis"


def _cube_limit(state: State) -> str:
    sheet = state.target
    relaxed = latest_relaxation(state, "cube")
    if relaxed:
        return f"relaxed: {md_json(relaxed.limit, 80)} (see the relaxations below)"
    m = sheet.cube_m if sheet else None
    if m is None:
        rows = "; ".join(f"{_m_range(row)}: {_cube_shapes(row)}" for row in CUBE_TABLE)
        return f"M not recorded, so not applied. Table: {rows}"
    row = cube_table_row(m)
    if row is None:
        return f"M = {m}: no row of the table applies"
    return f"M = {m} ({_m_range(row)}): {_cube_shapes(row)}"


def _m_range(row: CubeRow) -> str:
    if row.m_max is None:
        return f"M ≥ {row.m_min}"
    if row.m_max == row.m_min:
        return f"M = {row.m_min}"
    return f"{row.m_min} ≤ M ≤ {row.m_max}"


def _cube_shapes(row: CubeRow) -> str:
    """The row's limits as `[mL0,mL1], [kL0,kL1], [nL0,nL1]`, K where the full K is allowed."""
    return ", ".join(
        "[" + ",".join("K" if bound is None else str(bound) for bound in pair) + "]"
        for pair in row.limit
    )


def render_status(state: State, policy: Mapping[str, Any], op: str = "OP") -> str:
    """Tuning status: stage, skills, pending attempt, best, target, stop, points, alternates."""
    parts = [_heading("status")]
    lines = [
        f"- Stages: {_stages_text(state)}",
        "- Skills loaded: "
        + (", ".join(md_code(s, 40) for s in state.skills) or "none")
        + " (at most 2 base + 1 tune skill, R2)",
        f"- Pending attempt: {_pending_text(state)}",
        f"- Best: {_best_text(state)}",
        f"- Target: {_target_text(state)}",
        f"- Stop: {_stop_text(state, policy)}",
        f"- Attempts: {counts_text(state)}",
    ]
    if state.best is not None:
        lines.append(f"- Best config: {md_json(state.best.config, CONFIG, in_table=False)}")
    if state.overrides:
        lines.append(
            f"- Retry overrides (R9): {len(state.overrides)}, listed by `tune-ledger audit {op}`"
        )
    if state.repairs:
        lines.append(
            f"- Ledger repairs: {plural(len(state.repairs), 'torn tail')} quarantined "
            f"(see `tune-ledger audit {op}`)"
        )
    lines.extend(f"- **Merge conflict**: {md_text(c, 200)}" for c in state.conflicts)
    lines.append(f"- Next: `tune-ledger resume {op}` lists the steps allowed now.")
    parts.append("\n".join(lines) + "\n")
    parts.append("### Optimization points\n\n" + points_table(state, policy, POINT_ROWS))
    alternates_md = _alternates_table(state, policy)
    if alternates_md:
        parts.append(alternates_md)
    return _blocks(parts)


def _stages_text(state: State) -> str:
    if not state.entered:
        return "none entered yet (frontend → swimlane → incore → algorithm, R4)"
    items = []
    for stage in state.entered:
        if stage in state.exited:
            items.append(f"{stage} (exited: {md_text(state.exited[stage])})")
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
            f"{util:g}% and bubble rate < {bubble:g}%, or when the user stops it (R10)"
        )
    detail = f": {md_text(state.stop_detail, 200)}" if state.stop_detail else ""
    return f"**stopped ({md_text(state.stopped)})**{detail}; further tuning steps are refused"


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
        + md_table(["attempt", "point", "time (vs best)", "config vs best"], rows)
    )


def render_adopted(state: State, op: str = "OP", walk: Sequence[Step] | None = None) -> str:
    """Adopted changes from the baseline to the best, most recent last (R8)."""
    parts = [_heading("adopted")]
    adopted = [
        s
        for s in (steps(state) if walk is None else walk)
        if s.attempt.verdict in ("adopt", "target-reached") and s.attempt.failure is None
    ]
    sheet = state.target
    if not adopted:
        parts.append(
            f"None yet: the best is still the baseline ({fmt_time_us(sheet.baseline_us)})."
            if sheet
            else "None yet."
        )
        return _blocks(parts)
    if sheet is not None and state.best is not None:
        parts.append(
            f"Baseline {fmt_time_us(sheet.baseline_us)} → best {fmt_time_us(state.best.time_us)} "
            f"({fmt_speedup(sheet.baseline_us / state.best.time_us)}) in "
            f"{plural(len(adopted), 'adoption')}."
        )
    shown = adopted[-ADOPTED_ROWS:]
    rows = []
    if len(shown) == len(adopted):
        rows.append(
            [
                "0",
                "baseline",
                "-",
                "-",
                md_json(baseline_config(state), CELL),
                fmt_time_us(sheet.baseline_us if sheet else None),
            ]
        )
    else:
        earlier = len(adopted) - len(shown)
        parts.append(
            f"The {len(shown)} most recent are listed; {plural(earlier, 'earlier adoption')} "
            f"are in `tune-ledger log {op} --verdict adopt`."
        )
    first = len(adopted) - len(shown) + 1
    for number, step in enumerate(shown, first):
        rows.append(
            [
                str(number),
                md_code(step.attempt.id),
                step.attempt.stage,
                point_cell(step.attempt.point),
                change_text(step),
                time_text(step),
            ]
        )
    parts.append(
        md_table(
            ["#", "attempt", "stage", "point", "change", "time (vs best then)"],
            rows,
            align="rlllll",
        )
    )
    return _blocks(parts)


def render_failed(state: State, op: str = "OP", walk: Sequence[Step] | None = None) -> str:
    """Every failed or rolled-back attempt: the ledger refuses to retry them (R8, R9)."""
    parts = [_heading("failed")]
    all_steps = steps(state) if walk is None else walk
    failed = [s for s in all_steps if is_failed(s.attempt)]
    no_gain = sum(
        1 for s in all_steps if s.attempt.verdict == "no-gain" and s.attempt.failure is None
    )
    if not failed:
        parts.append(
            "None yet. A failed or rolled-back attempt is listed here, and the ledger "
            "refuses to measure its config again (R9, exit 4)."
        )
    else:
        shown = failed[-FAILED_ROWS:]
        intro = (
            f"{plural(len(failed), 'attempt')} failed or were rolled back; the ledger "
            "refuses to measure the same config again (R9, exit 4)."
        )
        if len(shown) < len(failed):
            intro += (
                f" The {len(shown)} most recent are listed (oldest first), the "
                f"{len(failed) - len(shown)} earlier ones are grouped below; every one "
                f"is in `tune-ledger log {op} --verdict rollback`."
            )
        parts.append(intro)
        parts.append(
            md_table(
                ["attempt", "stage", "point", "change", "outcome", "reason"],
                [
                    [
                        md_code(s.attempt.id),
                        s.attempt.stage,
                        point_cell(s.attempt.point),
                        change_text(s),
                        outcome(s.attempt),
                        reason_text(s),
                    ]
                    for s in shown
                ],
            )
        )
        earlier = failed[: len(failed) - len(shown)]
        if earlier:
            parts.append(failed_groups(earlier, op))
    if no_gain:
        parts.append(
            f"Also measured without gain (not retried either, R9): "
            f"{plural(no_gain, 'attempt')}; `tune-ledger log {op} --verdict no-gain`."
        )
    return _blocks(parts)


def render_history(state: State, op: str = "OP", walk: Sequence[Step] | None = None) -> str:
    """The most recent attempts and notes; the full history is `tune-ledger log`."""
    parts = [_heading("history")]
    recent = list(steps(state) if walk is None else walk)[-HISTORY_ROWS:]
    if not recent:
        parts.append("No attempts yet.")
    else:
        parts.append(
            f"The {plural(len(recent), 'most recent attempt')} (oldest first); the "
            f"full history: `tune-ledger log {op}`."
        )
        parts.append(
            md_table(
                ["#", "attempt", "stage", "point", "change", "result", "time (vs best then)"],
                [
                    [
                        str(s.attempt.seq),
                        md_code(s.attempt.id),
                        s.attempt.stage,
                        point_cell(s.attempt.point),
                        change_text(s),
                        outcome(s.attempt),
                        time_text(s),
                    ]
                    for s in recent
                ],
                align="rllllll",
            )
        )
    if state.notes:
        shown = state.notes[-NOTES:]
        head = "### Notes recorded in the ledger"
        if len(shown) < len(state.notes):
            head += f" (the {len(shown)} most recent of {len(state.notes)})"
        parts.append(head + "\n\n" + "\n".join(f"- {md_text(n, 300)}" for n in shown) + "\n")
    return _blocks(parts)
