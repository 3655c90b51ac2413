"""MEMORY.md's Performance target sheet: baseline, target, and the tile limits in force (R3).

The limits are rendered from the decider's own table and relaxations (`stages.target`), so the
sheet shows exactly what the ledger refuses by.
"""

from __future__ import annotations

from ledger.domain import devices
from ledger.domain.state import Relaxation, State
from ledger.projections.attempt_markdown import CELL
from ledger.projections.formatting import (
    fmt_speedup,
    fmt_time_us,
    md_code,
    md_json,
    md_table,
    md_text,
    short_id,
)
from ledger.projections.memory_layout import heading, join_blocks
from stages.person import person_label
from stages.target import (
    CUBE_TABLE,
    VEC_DESIGN_RANGE,
    VEC_LIMIT,
    CubeRow,
    cube_table_row,
    latest_relaxation,
)

TARGET_SOURCES = {
    "spec": "the SPEC.md performance budget",
    "upstream": "a measured comparable upstream kernel",
    "torch-eager": "measured torch eager",
}


def render_target_sheet(state: State, op: str) -> str:
    """The Performance target sheet: baseline, target, speed-up, tile limits, relaxations (R3)."""
    parts = [heading("target-sheet")]
    sheet = state.target
    if sheet is None:
        parts.append(
            "Not written yet. On first activation write it before any tune skill is loaded or "
            f"any stage entered (R3): `tune-ledger target {op} --baseline TIME --shape SHAPE "
            "--target TIME --target-source spec|upstream|torch-eager`."
        )
        return join_blocks(parts)
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
            f"{TARGET_SOURCES.get(sheet.target_source, md_text(sheet.target_source))}{reference}"
            + (
                f" (provenance: {md_text(sheet.target_origin_level)})"
                if sheet.target_origin_level
                else ""
            )
            + "; precedence: SPEC budget, else upstream kernel, else torch eager",
        ],
        [
            "Required speedup",
            fmt_speedup(sheet.required_speedup),
            "Baseline / Target: how many times faster the kernel must become (the seed's "
            '"Target / Baseline" is inverted)',
        ],
        [
            "Device",
            md_text(devices.label(sheet.device), CELL),
            "where the baseline ran; a verdict compares only measurements of this run mode, "
            "part, CANN and driver (R8)",
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
            f"limit only on profiling data, naming the measured attempts it rests on: "
            f"`tune-ledger relax {op} --what vec|cube --limit VALUE --basis TEXT --evidence "
            "ATTEMPT`."
        )
    else:
        parts.append(
            "Relaxations, each with its basis and the measured attempts it rests on (R3):\n"
        )
        parts.append(relaxations_table(state))
    return join_blocks(parts)


def relaxations_table(state: State) -> str:
    """Every relaxation with its basis and the measured attempts it rests on (R3), numbered as
    the target sheet and the report both show them."""
    return md_table(
        ["relaxation #", "tile", "new limit", "basis", "evidence (measured)", "event"],
        [
            [
                str(i),
                md_text(r.what),
                md_json(r.limit, 60),
                md_text(r.basis, 200),
                relaxation_evidence(state, r),
                md_code(short_id(r.event)),
            ]
            for i, r in enumerate(state.relaxations, 1)
        ],
        align="rlllll",
    )


def relaxation_evidence(state: State, relaxation: Relaxation) -> str:
    """Each evidence attempt with its median time and profile metrics; without any, who
    decided it (a person's decision, DESIGN §3.3)."""
    if not relaxation.evidence:
        return md_text(f"none: decided by {person_label(relaxation.person)}", CELL)
    cells = []
    for attempt_id in relaxation.evidence:
        attempt = state.attempts.get(attempt_id)
        measured = attempt.measurement if attempt is not None else None
        if measured is None:
            cells.append(f"{md_code(short_id(attempt_id))} (not measured)")
            continue
        figures = [fmt_time_us(measured.median_us)]
        if measured.util_pct is not None:
            figures.append(f"util {measured.util_pct:.1f}%")
        if measured.bubble_pct is not None:
            figures.append(f"bubble {measured.bubble_pct:.1f}%")
        metrics = sorted(measured.metrics.items())
        figures += [f"{md_text(k, 40)} {v:.4g}" for k, v in metrics[:_EVIDENCE_METRICS]]
        if len(metrics) > _EVIDENCE_METRICS:
            # Bounded, as every section is; the whole measurement is one command away.
            figures.append(
                f"{len(metrics) - _EVIDENCE_METRICS} more metrics (`tune-ledger log {state.op} "
                f"--attempt {short_id(attempt_id)}`)"
            )
        cells.append(f"{md_code(short_id(attempt_id))} {', '.join(figures)}")
    return "; ".join(cells)


# How many profile metrics of an evidence attempt the target sheet shows.
_EVIDENCE_METRICS = 6


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
        rows = "; ".join(f"{_m_range(row)}: {cube_shapes(row)}" for row in CUBE_TABLE)
        return f"M not recorded, so not applied. Table: {rows}"
    row = cube_table_row(m)
    if row is None:
        return f"M = {m}: no row of the table applies"
    return f"M = {m} ({_m_range(row)}): {cube_shapes(row)}"


def _m_range(row: CubeRow) -> str:
    if row.m_max is None:
        return f"M ≥ {row.m_min}"
    if row.m_max == row.m_min:
        return f"M = {row.m_min}"
    return f"{row.m_min} ≤ M ≤ {row.m_max}"


def cube_shapes(row: CubeRow) -> str:
    """The row's limits as `[mL0,mL1], [kL0,kL1], [nL0,nL1]`, K where the full K is allowed."""
    return ", ".join(
        "[" + ",".join("K" if bound is None else str(bound) for bound in pair) + "]"
        for pair in row.limit
    )
