"""The dashboard's index page: one row per op, from its audit and its summary."""

from __future__ import annotations

from collections.abc import Sequence

from ledger.projections import dashboard_assets as assets
from ledger.projections.dashboard_markup import (
    NONE,
    filter_controls,
    link,
    page_name,
    t,
    table,
    time_html,
)
from ledger.projections.dashboard_rows import OpView, PersonRow, Summary
from ledger.projections.formatting import fmt_speedup


def render_index(views: Sequence[OpView]) -> str:
    """The index page: one row per op (audit's verdict, stage, status, baseline → best,
    speed-up, target, attempts by outcome, provenance, conflicts, person decisions, device)."""
    damaged = sum(1 for v in views if v.health == "damaged")
    with_findings = sum(1 for v in views if v.health == "findings")
    headers = (
        "op",
        "audit",
        "stage",
        "status",
        "baseline → best",
        "speed-up",
        "target",
        "attempts by outcome",
        "provenance",
        "merge conflicts",
        "person decisions",
        "device",
    )
    rows = [_index_row(view) for view in views]
    body = [
        "<main>",
        "<h1>Tuning campaigns</h1>",
        f"<p>{len(views)} op(s) under <code>custom/</code>: {damaged} damaged, "
        f"{with_findings} with audit findings. Every number is from the replay "
        "<code>tune-ledger audit</code> checks; regenerate with "
        "<code>tune-ledger dashboard</code>.</p>",
        filter_controls("ops", "Filter ops", None),
        table("ops", headers, rows),
        "</main>",
    ]
    return assets.document("tune-ledger dashboard", "\n".join(body))


def _index_row(view: OpView) -> str:
    name = link(page_name(view.op), view.op) if view.has_page else t(view.op)
    op_cell = f'<th scope="row">{name}</th>'
    audit = _audit_cell(view)
    s = view.summary
    if s is None:
        blanks = "".join(f"<td>{NONE}</td>" for _ in range(10))
        return f'<tr class="damaged" data-outcome="damaged">{op_cell}<td>{audit}</td>{blanks}</tr>'
    cells = [
        t(s.stage or NONE),
        t(s.status)
        + (f'<br><span class="muted">{t(s.status_detail)}</span>' if s.status_detail else ""),
        f"{time_html(s.baseline_us)} → {time_html(s.best_us)}",
        t(fmt_speedup(s.speedup)) if s.speedup is not None else NONE,
        target_cell(s),
        outcomes_cell(s),
        levels_cell(s.provenance),
        t(len(s.conflicts)) if s.conflicts else "0",
        person_count(s.person_decisions),
        t(s.device) if s.device is not None else NONE,
    ]
    tds = "".join(f"<td>{c}</td>" for c in cells)
    return f'<tr data-outcome="{t(view.health)}">{op_cell}<td>{audit}</td>{tds}</tr>'


def audit_where(view: OpView) -> str:
    """The exit code audit gives the op, and the rule when one is named."""
    return f"exit {view.code}" + (f", rule {view.rule}" if view.rule else "")


def _audit_cell(view: OpView) -> str:
    if view.health == "clean":
        return '<span class="clean">clean</span>'
    first = t(view.problems[0]) if view.problems else ""
    where = audit_where(view)
    if view.health == "damaged":
        return f'<span class="problem">damaged</span> ({t(where)}): {first}'
    more = f" (and {len(view.problems) - 1} more)" if len(view.problems) > 1 else ""
    count = f"{len(view.problems)} finding(s)"
    return f'<span class="problem">{count}</span> ({t(where)}): {first}{t(more)}'


def target_cell(s: Summary) -> str:
    if s.target_us is None:
        return NONE
    met = "" if s.target_met is None else (" met" if s.target_met else " not met")
    return f"{time_html(s.target_us)}{t(met)}"


def outcomes_cell(s: Summary) -> str:
    if not s.outcomes:
        return "0"
    return t(f"{s.attempts}: ") + _pairs(s.outcomes)


def _pairs(pairs: Sequence[tuple[str, int]]) -> str:
    shown = [f"{name} {count}" for name, count in pairs if count]
    return t(", ".join(shown)) if shown else NONE


def levels_cell(pairs: Sequence[tuple[str, int]]) -> str:
    """The provenance mix: every level audit counts, zeros included (a zero is news too)."""
    return t(", ".join(f"{name} {count}" for name, count in pairs)) if pairs else NONE


def person_count(rows: Sequence[PersonRow]) -> str:
    """How many decisions a person took, and who (each name once, in ledger order)."""
    if not rows:
        return "0"
    names = ", ".join(dict.fromkeys(row.person for row in rows))
    return t(f"{len(rows)}: {names}")
