"""The dashboard's index rows: one op's audited state summed up as plain data.

Pure: it reads the state `audit` replayed and the audit's report (ledger/shell/audit.py), so
every number on the dashboard is one audit also stands behind. Times stay numbers here; the
renderers (dashboard_index_html.py, dashboard_page_html.py) format and escape them. Person
decisions, the device of the best and the provenance mix each come from one small function below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from ledger.domain import devices
from ledger.domain.state import State
from ledger.projections.attempt_markdown import outcome_counts
from ledger.projections.conflicts import texts as conflict_texts
from ledger.projections.person_decisions import person_text
from ledger.schema.vocabulary import ORIGIN_LEVELS
from stages.person import person_decisions as recorded_decisions
from stages.person import person_label
from stages.policy import lowered_guards


@frozen
class PersonRow:
    """A person's decision (DESIGN §3.3), in the words MEMORY.md and the report use."""

    text: str  # what, by whom, and why (person_decisions.person_text)
    person: str  # the name, or "person unknown (...)" for decisions recorded before issue 27
    event: str


@frozen
class Summary:
    """What the index shows of an op whose ledger replayed."""

    stage: str | None
    status: str  # active, not activated, stopped (why), handed back
    status_detail: str
    events: int
    baseline_us: float | None
    best_us: float | None
    target_us: float | None
    speedup: float | None  # baseline / best
    target_met: bool | None
    attempts: int
    outcomes: tuple[tuple[str, int], ...]
    provenance: tuple[tuple[str, int], ...]
    conflicts: tuple[str, ...]
    person_decisions: tuple[PersonRow, ...]
    device: str | None  # where the best was measured; None: no best yet
    lowered: tuple[str, ...] = ()  # the guards that stand lowered now (stages/policy.py)


@frozen
class OpView:
    """One op on the dashboard: its audit's verdict and, when its ledger replayed, its data."""

    op: str
    health: str  # "clean", "findings" (the audit found problems) or "damaged" (unreadable)
    problems: tuple[str, ...]  # the audit's findings and unresolved conflicts, or its error
    code: int | None  # the exit code audit gives this op (None: clean)
    rule: str | None
    summary: Summary | None  # None: damaged
    memory_path: str  # relative to the root
    ledger_path: str
    has_page: bool = True  # False for a folder under custom/ whose name is no op's


def op_view(
    op: str,
    state: State | None,
    report: Mapping[str, Any],
    error: tuple[int, str | None] | None,
    *,
    has_page: bool = True,
) -> OpView:
    """The op's index row from the state audit replayed, its report, and the error (exit code,
    rule) that stopped it from reading the ledger, if any."""
    findings = tuple(str(f) for f in report.get("findings", ()))
    unresolved = tuple(str(u) for u in report.get("unresolved", ()))
    memory, ledger = f"custom/{op}/MEMORY.md", f"custom/{op}/events.jsonl"
    if state is None or error is not None:
        code, rule = error if error is not None else (7, None)
        return OpView(op, "damaged", findings, code, rule, None, memory, ledger, has_page)
    problems = findings + unresolved
    health = "findings" if problems else "clean"
    exit_code = 7 if problems else None  # as `audit OP` exits
    return OpView(op, health, problems, exit_code, None, _summary(state, report), memory, ledger)


def person_decisions(state: State) -> tuple[PersonRow, ...]:
    """Each guard a person lowered, by name and with a reason (DESIGN §3.3), from the same
    projection as MEMORY.md's "Person decisions" and the report's."""
    return tuple(
        PersonRow(text=person_text(d), person=person_label(d.person), event=d.event)
        for d in recorded_decisions(state)
    )


def device(state: State) -> str | None:
    """The device the best was measured on (issue 29), as the report names it ("unknown" when
    the measurement recorded none); None when there is no best yet."""
    return devices.label(state.best.measurement.device) if state.best is not None else None


def provenance_mix(report: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """How many measurements and evidence each origin level holds, as audit counts them: every
    level (measured, unbound, ran, artefact, reported), zeros included, then any other level a
    report names."""
    counts = report.get("provenance") or {}
    extra = [str(level) for level in counts if level not in ORIGIN_LEVELS]
    return tuple((level, int(counts.get(level, 0))) for level in (*ORIGIN_LEVELS, *extra))


def _summary(state: State, report: Mapping[str, Any]) -> Summary:
    sheet, best = state.target, state.best
    best_us = best.time_us if best else None
    status, detail = _status(state)
    return Summary(
        stage=state.stage,
        status=status,
        status_detail=detail,
        events=state.event_count,
        baseline_us=sheet.baseline_us if sheet else None,
        best_us=best_us,
        target_us=sheet.target_us if sheet else None,
        speedup=sheet.baseline_us / best_us if sheet and best_us else None,
        target_met=best_us <= sheet.target_us if sheet and best_us is not None else None,
        attempts=len(state.attempts),
        outcomes=tuple(outcome_counts(state)),
        provenance=provenance_mix(report),
        conflicts=tuple(conflict_texts(state)),
        person_decisions=person_decisions(state),
        device=device(state),
        lowered=tuple(lowered_guards(state)),
    )


def _status(state: State) -> tuple[str, str]:
    """(status, detail): handed back, stopped and why, not activated, or active (R1, R10)."""
    if state.handback is not None:
        return f"handed back after the {state.stopped or 'end'} stop", state.handback["summary"]
    if state.stopped:
        return f"stopped: {state.stopped}", state.stop_detail
    if state.handed_back:
        return "activation failed, handed back", "; ".join(state.activation_problems)
    if not state.activated:
        return "not activated", ""
    return "active", ""
