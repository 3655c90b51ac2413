"""The data of an op's dashboard page beyond its index row: chart, attempts, points, target
sheet, kernel versions and timeline. The replayed steps, points, sheet and relaxations are
held as they are (the HTML formats them); this module adds only what the page derives: the
limits in force, the evidence behind each relaxation, the kernel diffs and the stage spans.

Pure, like the index rows (dashboard_rows.py): the same replayed state and audit report. The
kept kernels' text is the one thing not in the state: the shell reads those files and passes
their text in as data (`op_page(kernel_texts=...)`), so this module never reads a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from ledger.domain.state import Point, Relaxation, State, TargetSheet
from ledger.log.codec import canonical_json
from ledger.projections.dashboard_rows import OpView
from ledger.projections.kernels import kernel_diff
from ledger.projections.memory_target import cube_shapes
from ledger.projections.report_chart import ChartSize, chart_svg
from ledger.projections.timeline import (
    StageSpan,
    Step,
    is_failed,
    outcome,
    stage_spans,
    steps,
)
from ledger.schema.vocabulary import ADOPTED
from stages.person import person_label
from stages.target import VEC_LIMIT, cube_table_row, latest_relaxation

PAGE_CHART = ChartSize(1200, 560)  # the report's chart is 900 x 440
DIFF_LINES = 2000  # a diff between two kernels is cut after this many lines (said so)


@frozen
class EvidenceRef:
    """A measured attempt a relaxation rests on: its id as recorded, and its number when it is
    an attempt of this op (the page links it to the attempt's row)."""

    attempt: str
    seq: int | None
    time_us: float | None


@frozen
class RelaxationRow:
    """A tile-limit relaxation with the evidence behind it (R3)."""

    relaxation: Relaxation
    evidence: tuple[EvidenceRef, ...] | None  # None: relaxed without measured evidence
    person: str | None = None  # who relaxed without evidence (person_label), else None


@frozen
class KernelVersion:
    """One kernel of the adopted chain: the activation's, then each adopted algorithm change's,
    with the unified diff from the one before when both were kept."""

    digest: str
    attempt: str | None  # None: the kernel activated (the baseline's)
    seq: int | None
    kept: bool  # its text was read from custom/<op>/kernels/<digest>.py and matched its name
    diff: str | None  # from the previous version; None: first, or a side not kept
    diff_cut: int = 0  # lines of the diff left out (DIFF_LINES)


@frozen
class TargetView:
    """The Performance target sheet with its limits in force and their relaxations (R3)."""

    sheet: TargetSheet
    vec_limit: str
    cube_limit: str
    relaxations: tuple[RelaxationRow, ...]


@frozen
class OpPage:
    """Everything an op's page shows beyond its index row."""

    view: OpView
    chart: str | None  # the report's chart, larger, as an inline <svg>
    target: TargetView | None
    adopted: tuple[Step, ...]
    failed: tuple[Step, ...]
    points: tuple[Point, ...]
    timeline: tuple[StageSpan, ...]
    attempts: tuple[Step, ...]
    decisions: tuple[str, ...]  # audit's: stops lifted, hand-backs, retry overrides, R11
    notes: tuple[str, ...]
    kernels: tuple[KernelVersion, ...] | None


def op_page(
    view: OpView,
    state: State | None,
    report: Mapping[str, Any],
    kernel_texts: Mapping[str, str] | None = None,
) -> OpPage:
    """The op's page data from the same state and report as its row; `kernel_texts` are the
    kept kernels' text by digest, as the shell read and checked them (`kernel_chain` names the
    digests wanted; one missing is shown as not kept)."""
    if state is None or view.summary is None:
        return OpPage(view, None, None, (), (), (), (), (), (), (), None)
    walk = steps(state)
    adopted = tuple(s for s in walk if outcome(s.attempt) in ADOPTED)
    failed = tuple(s for s in walk if is_failed(s.attempt))
    decisions = (
        *(str(d) for d in report.get("decisions", ())),
        *(f"retry override on attempt {o['attempt']}: {o['reason']}" for o in _overrides(report)),
        *(f"R11: {d}" for d in report.get("reported_decisions", ())),
    )
    return OpPage(
        view=view,
        chart=chart_svg(state, walk, PAGE_CHART),
        target=_target(state),
        adopted=adopted,
        failed=failed,
        points=tuple(state.points.values()),
        timeline=tuple(stage_spans(state, walk)),
        attempts=tuple(walk),
        decisions=decisions,
        notes=tuple(state.notes),
        kernels=kernel_versions(state, kernel_texts or {}),
    )


def kernel_chain(state: State) -> tuple[tuple[str | None, str], ...]:
    """(attempt, digest) of each kernel the adopted chain went through: the one activated
    (attempt None), then each adopted attempt that brought a kernel of its own, in order
    (a candidate or mutation runs the best's kernel: no new version)."""
    chain: list[tuple[str | None, str]] = []
    if state.activation_digest is not None:
        chain.append((None, state.activation_digest))
    for attempt_id in state.adopted:
        digest = state.attempts[attempt_id].impl_digest
        if digest is not None and (not chain or chain[-1][1] != digest):
            chain.append((attempt_id, digest))
    return tuple(chain)


def kernel_versions(state: State, texts: Mapping[str, str]) -> tuple[KernelVersion, ...] | None:
    """The adopted chain's kernels with the unified diff between consecutive kept ones;
    `texts` holds each kept kernel's text by digest (read by the shell). None: no kernel bound
    yet (not activated)."""
    chain = kernel_chain(state)
    if not chain:
        return None
    versions: list[KernelVersion] = []
    before: tuple[str, str] | None = None  # (label, digest) of the previous version
    for attempt_id, digest in chain:
        label = attempt_id or "activated"
        diff, cut = None, 0
        if before is not None and before[1] in texts and digest in texts:
            diff, cut = _diff(texts[before[1]], texts[digest], before, (label, digest))
        seq = state.attempts[attempt_id].seq if attempt_id is not None else None
        versions.append(KernelVersion(digest, attempt_id, seq, digest in texts, diff, cut))
        before = (label, digest)
    return tuple(versions)


def _diff(a: str, b: str, a_name: tuple[str, str], b_name: tuple[str, str]) -> tuple[str, int]:
    """The unified diff of two kernels' text, as `kernel diff` prints it, cut at DIFF_LINES."""
    lines = kernel_diff(a, b, a_name, b_name)
    shown = [line if line.endswith("\n") else line + "\n" for line in lines[:DIFF_LINES]]
    return "".join(shown), max(0, len(lines) - DIFF_LINES)


def relaxation_evidence(state: State, event: str) -> tuple[EvidenceRef, ...] | None:
    """The measured attempts a relaxation rests on (`relax --evidence`), each with its number
    when it is an attempt of this op; None when it names none (a person relaxed without)."""
    relaxation = next((r for r in state.relaxations if r.event == event), None)
    if relaxation is None or not relaxation.evidence:
        return None
    refs = []
    for attempt_id in relaxation.evidence:
        attempt = state.attempts.get(attempt_id)
        m = attempt.measurement if attempt is not None else None
        refs.append(
            EvidenceRef(
                attempt=attempt_id,
                seq=attempt.seq if attempt is not None else None,
                time_us=m.median_us if m is not None else None,
            )
        )
    return tuple(refs)


def _target(state: State) -> TargetView | None:
    sheet = state.target
    if sheet is None:
        return None
    vec = latest_relaxation(state, "vec")
    return TargetView(
        sheet=sheet,
        vec_limit=f"relaxed to {canonical_json(vec.limit)}" if vec else f"≤ {VEC_LIMIT} per axis",
        cube_limit=_cube_limit(state),
        relaxations=tuple(
            RelaxationRow(
                relaxation=r,
                evidence=relaxation_evidence(state, r.event),
                person=person_label(r.person) if not r.evidence else None,
            )
            for r in state.relaxations
        ),
    )


def _cube_limit(state: State) -> str:
    relaxed = latest_relaxation(state, "cube")
    if relaxed:
        return f"relaxed to {canonical_json(relaxed.limit)}"
    m = state.target.cube_m if state.target else None
    if m is None:
        return "M not recorded: the M-based table is not applied"
    row = cube_table_row(m)
    if row is None:
        return f"M = {m}: no row of the table applies"
    return f"M = {m}: {cube_shapes(row)}"


def _overrides(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [o for o in report.get("overrides", ()) if isinstance(o, Mapping)]
