"""The tuning report: baseline → best, gap to target, per-stage summary, tables and a chart.

`render_report` is pure: the same state and attempts give the same Markdown and SVG bytes (no
timestamps, fixed number formats), so a report committed to git changes only with the facts.
The chart (`report_chart`) is a small self-written SVG: time per attempt, the best-so-far and target
lines; the Markdown refers to it as `<op>_tuning_report.svg` and carries a short text table
with the same data for readers without images.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ledger.domain import devices
from ledger.domain.state import Attempt, State
from ledger.projections.attempt_markdown import (
    attempt_cells,
    counts_text,
    failed_groups,
    points_table,
    reason_text,
    time_text,
)
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
    short_id,
    with_legend,
)
from ledger.projections.memory_target import TARGET_SOURCES, relaxations_table
from ledger.projections.person_decisions import person_lines
from ledger.projections.report_chart import render_chart
from ledger.projections.timeline import Step, best_after, is_failed, outcome, stage_spans, steps
from ledger.schema.vocabulary import ADOPTED
from stages.binding import best_impl_digest
from stages.policy import lowered_guards

REPORT_FAILED_ROWS = 200
CHART_BINS = 20


def report_name(op: str) -> str:
    """The report's file name for `op` (the chart is the same name with `.svg`)."""
    return f"{op}_tuning_report.md"


def chart_name(op: str) -> str:
    """The chart's file name for `op`, as the report refers to it."""
    return f"{op}_tuning_report.svg"


def render_report(
    state: State,
    history: Iterable[Attempt] | None,
    policy: Mapping[str, Any],
) -> tuple[str, str]:
    """(Markdown, SVG) of the tuning report for `state`; `history` defaults to its attempts."""
    op = state.op or "op"
    walk = steps(state, history)
    parts = [
        f"# {md_text(op)}: tuning report\n",
        f"Rendered from the ledger `custom/{md_text(op)}/events.jsonl` at "
        f"{plural(state.event_count, 'event')} (last event {md_code(short_id(state.last_event))})."
        " The full history: `tune-ledger log " + md_text(op) + "`.",
        "## Person decisions\n\n" + _person_decisions(state),
        "## Summary\n\n" + _summary(state, walk),
        "## Time per attempt\n\n"
        f"![Time per attempt with the best so far and the target]({chart_name(op)})\n\n"
        "The same data as text, in ranges of attempts:\n\n" + _chart_table(state, walk),
        "## Per stage\n\n" + _stage_table(state, walk),
        "## Optimization points\n\n" + points_table(state, policy),
        "## Adopted changes\n\n" + _adopted_table(state, walk),
        "## Relaxations\n\n" + _relaxations(state),
        "## Kernel changes\n\n" + _kernel_changes(state, walk),
        "## Failed and rolled-back attempts\n\n" + _failed_tables(walk, op),
    ]
    markdown = "\n".join(part.rstrip("\n") + "\n" for part in parts)
    return markdown, render_chart(state, walk)


# --- Markdown ---------------------------------------------------------------------------------


def _person_decisions(state: State) -> str:
    """Each guard a person lowered, by name and with the reason, first (DESIGN §3.3)."""
    lines = person_lines(state)
    lowered = lowered_guards(state)
    text = "\n".join(lines) if lines else "None: every step followed the protocol's guards."
    if lowered:
        text += f"\n\nGuards lowered now: {'; '.join(lowered)}."
    return text + "\n"


def _summary(state: State, walk: Sequence[Step]) -> str:
    sheet = state.target
    best = state.best
    rows: list[list[str]] = []
    if sheet is not None:
        rows.append(
            [
                "Baseline",
                f"{fmt_time_us(sheet.baseline_us)} on the P0 shape "
                f"{md_code(sheet.shape, 60)} ({md_text(sheet.metric, 40)})",
            ]
        )
        source = TARGET_SOURCES.get(sheet.target_source, md_text(sheet.target_source))
        rows.append(["Target", f"{fmt_time_us(sheet.target_us)} from {source}"])
        rows.append(
            [
                "Required speedup",
                f"{fmt_speedup(sheet.required_speedup)} (Baseline / Target; the seed's "
                '"Target / Baseline" is inverted)',
            ]
        )
        rows.append(["Baseline device", md_text(devices.label(sheet.device), 200)])
    if best is not None:
        source = f"attempt {md_code(best.attempt)}" if best.attempt else "the baseline"
        rows.append(["Best", f"{fmt_time_us(best.time_us)} from {source}"])
        rows.append(["Best measured on", md_text(devices.label(best.measurement.device), 200)])
        rows.append(["Best config", md_json(best.config, 300)])
    if sheet is not None and best is not None:
        rows.append(["Speed-up reached", fmt_speedup(sheet.baseline_us / best.time_us)])
        gap = change_pct(best.time_us, sheet.target_us)
        if best.time_us <= sheet.target_us:
            rows.append(["Gap to target", f"met: best is {fmt_pct(-gap)} below the target"])
        else:
            rows.append(
                [
                    "Gap to target",
                    f"best is {fmt_pct(gap)} above the target; a further "
                    f"{fmt_speedup(best.time_us / sheet.target_us)} is needed",
                ]
            )
    stage = state.stage or "none"
    stop = f"stopped ({md_text(state.stopped)})" if state.stopped else "running"
    if state.stop_detail:
        stop += ": " + md_text(state.stop_detail, 200)
    rows.append(["Stage", f"{stage}; {stop}"])
    rows.append(
        ["Attempts", counts_text(state) if len(walk) == len(state.attempts) else str(len(walk))]
    )
    return md_table(["", "value"], rows)


def _chart_table(state: State, walk: Sequence[Step]) -> str:
    if not walk:
        return "No attempts yet.\n"
    size = math.ceil(len(walk) / CHART_BINS)
    best_us = state.target.baseline_us if state.target else None
    rows = []
    for start in range(0, len(walk), size):
        chunk = walk[start : start + size]
        valid = [
            s.attempt.measurement.median_us
            for s in chunk
            if s.attempt.measurement is not None and s.attempt.failure is None
        ]
        for step in chunk:
            best_us = best_after(step, best_us)
        failed = sum(1 for s in chunk if s.attempt.failure is not None)
        rows.append(
            [
                f"{chunk[0].attempt.seq}–{chunk[-1].attempt.seq}",
                str(len(valid)),
                str(failed),
                fmt_time_us(min(valid)) if valid else "-",
                fmt_time_us(best_us),
            ]
        )
    return md_table(
        ["attempts", "measured", "failed", "fastest", "best so far"], rows, align="lrrrr"
    )


def _stage_table(state: State, walk: Sequence[Step]) -> str:
    spans = stage_spans(state, walk)
    if not spans:
        return "No stage entered yet.\n"
    rows = []
    for span in spans:
        counts = Counter("failed" if s.attempt.failure else outcome(s.attempt) for s in span.steps)
        start_us, best_us = span.best_start_us, span.best_end_us
        gain = fmt_pct(change_pct(best_us, start_us), signed=True) if best_us and start_us else "-"
        rows.append(
            [
                span.stage,
                str(len(span.steps)),
                str(counts["adopt"] + counts["target-reached"]),
                str(counts["no-gain"]),
                str(counts["rollback"]),
                str(counts["failed"]),
                str(counts["abandoned"]),
                fmt_time_us(start_us),
                fmt_time_us(best_us),
                gain,
                md_text(span.exit),
            ]
        )
    return md_table(
        [
            "stage",
            "attempts",
            "adopted",
            "no-gain",
            "rollback",
            "failed",
            "abandoned",
            "best at start",
            "best at end",
            "change",
            "exit",
        ],
        rows,
        align="lrrrrrrrrrl",
    )


def _adopted_table(state: State, walk: Sequence[Step]) -> str:
    adopted = [s for s in walk if s.attempt.verdict in ADOPTED and s.attempt.failure is None]
    if not adopted:
        return "None: the best is still the baseline.\n"
    baseline = state.target.baseline_us if state.target else None
    rows = []
    for number, step in enumerate(adopted, 1):
        measurement = step.attempt.measurement
        total = fmt_speedup(baseline / measurement.median_us) if baseline and measurement else "-"
        rows.append([str(number), *attempt_cells(step), time_text(step), total])
    return with_legend(
        md_table(
            [
                "adoption #",
                "attempt",
                "stage",
                "point",
                "change",
                "time (vs best then)",
                "speed-up vs baseline",
            ],
            rows,
            align="rllllll",
        )
    )


def _relaxations(state: State) -> str:
    """Every tile-limit relaxation with its basis and evidence (R3): a best beyond the seed's
    limits says so."""
    if not state.relaxations:
        return "None: every config stayed within the tile-shape limits of R3.\n"
    return relaxations_table(state)


def _kernel_changes(state: State, walk: Sequence[Step]) -> str:
    """The algorithm changes, each with the digest of the kernel it ran, and the kernel the
    best needs (R5, R6): a best measured on a changed kernel is only reproduced with it."""
    kernel = best_impl_digest(state)
    changes = [s for s in walk if s.attempt.kind == "algorithm"]
    adopted = [s.attempt for s in changes if s.attempt.id in state.adopted]
    needs = (
        f"The best needs kernel {md_code(short_digest(kernel))}, from algorithm change "
        f"{md_code(adopted[-1].id)}."
        if adopted and adopted[-1].impl_digest == kernel
        else f"The best runs the activated kernel {md_code(short_digest(kernel))}."
    )
    if not changes:
        return f"None. {needs}\n"
    rows = [
        [
            str(s.attempt.seq),
            md_code(s.attempt.id),
            md_code(short_digest(s.attempt.impl_digest)),
            md_text(s.attempt.description or "-", 200),
            outcome(s.attempt),
        ]
        for s in changes
    ]
    table = md_table(["attempt #", "attempt", "kernel", "change", "outcome"], rows, align="rllll")
    return f"{needs}\n\n{table}"


def _failed_tables(walk: Sequence[Step], op: str) -> str:
    failed = [s for s in walk if is_failed(s.attempt)]
    if not failed:
        return "None.\n"
    shown = failed[-REPORT_FAILED_ROWS:]
    text = ""
    if len(shown) < len(failed):
        text += (
            f"The {len(shown)} most recent of {len(failed)} (oldest first); the earlier "
            f"ones are grouped below, and every one is in `tune-ledger log {op} "
            "--verdict rollback`.\n\n"
        )
    text += md_table(
        ["attempt #", "attempt", "stage", "point", "change", "outcome", "reason"],
        [
            [str(s.attempt.seq), *attempt_cells(s), outcome(s.attempt), reason_text(s)]
            for s in shown
        ],
        align="rllllll",
    )
    earlier = failed[: len(failed) - len(shown)]
    if earlier:
        text += "\n" + failed_groups(earlier, op)
    return text
