"""MEMORY.md's Adopted changes, Failed attempts and Recent history sections (R8, R9).

Each is bounded: it lists the most recent rows and counts or groups the rest, pointing at
`tune-ledger log`; the full history stays in the ledger.
"""

from __future__ import annotations

from collections.abc import Sequence

from ledger.domain.state import State
from ledger.projections.attempt_markdown import (
    CELL,
    attempt_cells,
    failed_groups,
    reason_text,
    time_text,
)
from ledger.projections.formatting import (
    fmt_speedup,
    fmt_time_us,
    md_json,
    md_table,
    md_text,
    plural,
    reported_mark,
    with_legend,
)
from ledger.projections.memory_layout import heading, join_blocks
from ledger.projections.timeline import Step, baseline_config, is_failed, outcome
from ledger.schema.vocabulary import ADOPTED

# Bounds that keep MEMORY.md short enough for an agent's context however long the campaign
# runs (1,000 attempts stay under 32 KB); the full history stays in the ledger.
FAILED_ROWS = 25
ADOPTED_ROWS = 20
HISTORY_ROWS = 10
NOTES = 5


def render_adopted(state: State, op: str, walk: Sequence[Step]) -> str:
    """Adopted changes from the baseline to the best, most recent last (R8)."""
    parts = [heading("adopted")]
    adopted = [s for s in walk if s.attempt.failure is None and s.attempt.verdict in ADOPTED]
    sheet = state.target
    if not adopted:
        parts.append(
            f"None yet: the best is still the baseline ({fmt_time_us(sheet.baseline_us)})."
            if sheet
            else "None yet."
        )
        return join_blocks(parts)
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
                fmt_time_us(sheet.baseline_us if sheet else None)
                + reported_mark(sheet.origin_level if sheet else None),
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
        rows.append([str(number), *attempt_cells(step), time_text(step)])
    parts.append(
        with_legend(
            md_table(
                ["adoption #", "attempt", "stage", "point", "change", "time (vs best then)"],
                rows,
                align="rlllll",
            )
        )
    )
    return join_blocks(parts)


def render_failed(op: str, walk: Sequence[Step]) -> str:
    """Every failed or rolled-back attempt: the ledger refuses to retry them (R8, R9)."""
    parts = [heading("failed")]
    failed = [s for s in walk if is_failed(s.attempt)]
    no_gain = sum(1 for s in walk if s.attempt.failure is None and s.attempt.verdict == "no-gain")
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
            with_legend(
                md_table(
                    ["attempt", "stage", "point", "change", "outcome", "reason"],
                    [[*attempt_cells(s), outcome(s.attempt), reason_text(s)] for s in shown],
                )
            )
        )
        earlier = len(failed) - len(shown)
        if earlier:
            parts.append(failed_groups(failed[:earlier], op))
    if no_gain:
        parts.append(
            f"Also measured without gain (not retried either, R9): "
            f"{plural(no_gain, 'attempt')}; `tune-ledger log {op} --verdict no-gain`."
        )
    return join_blocks(parts)


def render_history(state: State, op: str, walk: Sequence[Step]) -> str:
    """The most recent attempts and notes; the full history is `tune-ledger log`."""
    parts = [heading("history")]
    recent = list(walk[-HISTORY_ROWS:])
    if not recent:
        parts.append("No attempts yet.")
    else:
        parts.append(
            f"The {plural(len(recent), 'most recent attempt')} (oldest first); the "
            f"full history: `tune-ledger log {op}`."
        )
        parts.append(
            with_legend(
                md_table(
                    [
                        "attempt #",
                        "attempt",
                        "stage",
                        "point",
                        "change",
                        "result",
                        "time (vs best then)",
                    ],
                    [
                        [str(s.attempt.seq), *attempt_cells(s), outcome(s.attempt), time_text(s)]
                        for s in recent
                    ],
                    align="rllllll",
                )
            )
        )
    if state.notes:
        shown = state.notes[-NOTES:]
        head = "### Notes recorded in the ledger"
        if len(shown) < len(state.notes):
            head += f" (the {len(shown)} most recent of {len(state.notes)})"
        parts.append(head + "\n\n" + "\n".join(f"- {md_text(n, 300)}" for n in shown) + "\n")
    return join_blocks(parts)
