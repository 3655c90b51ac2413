"""The tuning report: baseline → best, gap to target, per-stage summary, tables and a chart.

`render_report` is pure: the same state and attempts give the same Markdown and SVG bytes (no
timestamps, fixed number formats), so a report committed to git changes only with the facts.
The chart is a small self-written SVG: time per attempt, the best-so-far line and the target
line; the Markdown refers to it as `<op>_tuning_report.svg` and carries a short text table
with the same data for readers without images.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ledger.domain.state import Attempt, State
from ledger.projections.attempt_markdown import (
    change_text,
    counts_text,
    failed_groups,
    points_table,
    reason_text,
    time_text,
)
from ledger.projections.formatting import (
    change_pct,
    fmt_num,
    fmt_pct,
    fmt_speedup,
    fmt_time_us,
    md_code,
    md_json,
    md_table,
    md_text,
    plural,
    short_id,
)
from ledger.projections.memory_sections import TARGET_SOURCES
from ledger.projections.timeline import Step, is_failed, outcome, steps

Axis = Callable[[float], float]

REPORT_FAILED_ROWS = 200
CHART_BINS = 20

# Chart geometry, in SVG user units.
WIDTH, HEIGHT = 800, 420
LEFT, RIGHT, TOP, BOTTOM = 84, 24, 56, 52
PLOT_W = WIDTH - LEFT - RIGHT
PLOT_H = HEIGHT - TOP - BOTTOM
COLORS = {
    "adopt": "#2ca02c",
    "target-reached": "#2ca02c",
    "no-gain": "#7f7f7f",
    "rollback": "#ff7f0e",
    "failed": "#d62728",
    "best": "#1f77b4",
    "target": "#d62728",
    "baseline": "#7f7f7f",
}


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
        "## Summary\n\n" + _summary(state, walk),
        "## Time per attempt\n\n"
        f"![Time per attempt with the best so far and the target]({chart_name(op)})\n\n"
        "The same data as text, in ranges of attempts:\n\n" + _chart_table(state, walk),
        "## Per stage\n\n" + _stage_table(state, walk),
        "## Optimization points\n\n" + points_table(state, policy),
        "## Adopted changes\n\n" + _adopted_table(state, walk),
        "## Failed and rolled-back attempts\n\n" + _failed_tables(walk, op),
    ]
    markdown = "\n".join(part.rstrip("\n") + "\n" for part in parts)
    return markdown, render_chart(state, walk)


# --- Markdown ---------------------------------------------------------------------------------


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
    if best is not None:
        source = f"attempt {md_code(best.attempt)}" if best.attempt else "the baseline"
        rows.append(["Best", f"{fmt_time_us(best.time_us)} from {source}"])
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
            best_us = _best_after(step, best_us)
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


def _best_after(step: Step, best_us: float | None) -> float | None:
    attempt = step.attempt
    if (
        attempt.verdict in ("adopt", "target-reached")
        and attempt.failure is None
        and attempt.measurement is not None
    ):
        return attempt.measurement.median_us
    return best_us


def _stage_table(state: State, walk: Sequence[Step]) -> str:
    stages = list(dict.fromkeys([*state.entered, *(s.attempt.stage for s in walk)]))
    if not stages:
        return "No stage entered yet.\n"
    rows = []
    best_us = state.target.baseline_us if state.target else None
    for stage in stages:
        members = [s for s in walk if s.attempt.stage == stage]
        start_us = members[0].best_us if members else best_us
        for step in members:
            best_us = _best_after(step, best_us)
        counts: dict[str, int] = {}
        for step in members:
            key = "failed" if step.attempt.failure else outcome(step.attempt)
            counts[key] = counts.get(key, 0) + 1
        adopted = counts.get("adopt", 0) + counts.get("target-reached", 0)
        gain = fmt_pct(change_pct(best_us, start_us), signed=True) if best_us and start_us else "-"
        exit_condition = state.exited.get(stage, "current" if stage == state.stage else "-")
        rows.append(
            [
                stage,
                str(len(members)),
                str(adopted),
                str(counts.get("no-gain", 0)),
                str(counts.get("rollback", 0)),
                str(counts.get("failed", 0)),
                str(counts.get("abandoned", 0)),
                fmt_time_us(start_us),
                fmt_time_us(best_us),
                gain,
                md_text(exit_condition),
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
    adopted = [
        s
        for s in walk
        if s.attempt.verdict in ("adopt", "target-reached") and s.attempt.failure is None
    ]
    if not adopted:
        return "None: the best is still the baseline.\n"
    baseline = state.target.baseline_us if state.target else None
    rows = []
    for number, step in enumerate(adopted, 1):
        measurement = step.attempt.measurement
        total = fmt_speedup(baseline / measurement.median_us) if baseline and measurement else "-"
        rows.append(
            [
                str(number),
                md_code(step.attempt.id),
                step.attempt.stage,
                md_code(step.attempt.point, 40) if step.attempt.point else "-",
                change_text(step),
                time_text(step),
                total,
            ]
        )
    return md_table(
        ["#", "attempt", "stage", "point", "change", "time (vs best then)", "speed-up vs baseline"],
        rows,
        align="rllllll",
    )


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
        ["#", "attempt", "stage", "point", "change", "outcome", "reason"],
        [
            [
                str(s.attempt.seq),
                md_code(s.attempt.id),
                s.attempt.stage,
                md_code(s.attempt.point, 40) if s.attempt.point else "-",
                change_text(s),
                outcome(s.attempt),
                reason_text(s),
            ]
            for s in shown
        ],
        align="rllllll",
    )
    earlier = failed[: len(failed) - len(shown)]
    if earlier:
        text += "\n" + failed_groups(earlier, op)
    return text


# --- SVG ----------------------------------------------------------------------------------------


def _f(value: float) -> str:
    """A coordinate with one decimal: fixed format, so the bytes never depend on float noise."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = span / ticks
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power


def escape(text: str) -> str:
    """`text` escaped for SVG character data (xml.sax.saxutils.escape)."""
    # Imported on use: xml.sax.saxutils pulls in urllib.request, http and email, which every
    # CLI command would otherwise load at startup for a chart that only `report` draws.
    from xml.sax.saxutils import escape as xml_escape

    return xml_escape(text)


def quoteattr(text: str) -> str:
    """`text` as a quoted SVG attribute value (xml.sax.saxutils.quoteattr)."""
    from xml.sax.saxutils import quoteattr as xml_quoteattr

    return xml_quoteattr(text)


def render_chart(state: State, walk: Sequence[Step]) -> str:
    """The SVG chart: each attempt's time, the best so far, the baseline and the target."""
    op = state.op or "op"
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(op)}: time per attempt, best so far and target</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="24" font-size="15" font-weight="bold">'
        f"{escape(op)}: time per attempt (µs)</text>",
    ]
    sheet = state.target
    if sheet is None:
        out.append(
            f'<text x="{LEFT}" y="{TOP + PLOT_H // 2}">No target sheet yet: nothing to '
            "chart.</text>"
        )
        out.append("</svg>")
        return "\n".join(out) + "\n"
    high = max(sheet.baseline_us, sheet.target_us) * 1.25
    step = _nice_step(high)
    high = math.ceil(high / step) * step
    count = max(len(walk), 1)

    def x(index: float) -> float:
        return LEFT + PLOT_W * index / count

    def y(time_us: float) -> float:
        return TOP + PLOT_H * (1.0 - min(time_us, high) / high)

    out.extend(_axes(high, step, count, x, y))
    out.append(_best_line(sheet.baseline_us, walk, x, y))
    out.extend(_points(walk, high, x, y))
    for name, value, dash in (
        ("baseline", sheet.baseline_us, "2 3"),
        ("target", sheet.target_us, "6 4"),
    ):
        out.append(
            f'<line id="{name}-line" x1="{_f(LEFT)}" y1="{_f(y(value))}" '
            f'x2="{_f(LEFT + PLOT_W)}" y2="{_f(y(value))}" stroke="{COLORS[name]}" '
            f'stroke-width="1.5" stroke-dasharray="{dash}"/>'
        )
        out.append(
            f'<text x="{_f(LEFT + PLOT_W - 4)}" y="{_f(y(value) - 4)}" '
            f'text-anchor="end" fill="{COLORS[name]}">'
            f"{name} {escape(fmt_time_us(value))}</text>"
        )
    out.extend(_legend())
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _axes(high: float, step: float, count: int, x: Axis, y: Axis) -> list[str]:
    lines = [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + PLOT_H}" stroke="#000000"/>',
        f'<line x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{LEFT + PLOT_W}" y2="{TOP + PLOT_H}" '
        'stroke="#000000"/>',
    ]
    decimals = 0 if step >= 1 else 2
    ticks = round(high / step)
    for i in range(ticks + 1):
        value = i * step
        lines.append(
            f'<line x1="{LEFT}" y1="{_f(y(value))}" x2="{LEFT + PLOT_W}" '
            f'y2="{_f(y(value))}" stroke="#e0e0e0"/>'
        )
        lines.append(
            f'<text x="{LEFT - 6}" y="{_f(y(value) + 4)}" text-anchor="end">'
            f"{fmt_num(value, decimals)}</text>"
        )
    x_step = max(1, int(_nice_step(float(count), 8))) if count > 1 else 1
    for index in range(0, count + 1, x_step):
        lines.append(
            f'<text x="{_f(x(index))}" y="{TOP + PLOT_H + 18}" text-anchor="middle">{index}</text>'
        )
    lines.append(
        f'<text x="{LEFT + PLOT_W // 2}" y="{HEIGHT - 12}" text-anchor="middle">'
        "attempt (0 = baseline)</text>"
    )
    return lines


def _points(walk: Sequence[Step], high: float, x: Axis, y: Axis) -> list[str]:
    groups: dict[str, list[str]] = {"adopt": [], "no-gain": [], "rollback": [], "failed": []}
    bottom = TOP + PLOT_H
    for index, step in enumerate(walk, 1):
        attempt = step.attempt
        cx = _f(x(index))
        if attempt.failure is not None or (
            attempt.measurement is None and attempt.status == "failed"
        ):
            groups["failed"].append(
                f'<path d="M{_f(x(index) - 3)} {_f(bottom - 9)}l6 6m0 -6l-6 6"/>'
            )
            continue
        if attempt.measurement is None or attempt.verdict is None:
            continue  # pending or abandoned: nothing measured to plot
        key = "adopt" if attempt.verdict in ("adopt", "target-reached") else attempt.verdict
        time_us = attempt.measurement.median_us
        if time_us > high:  # off the chart: a triangle on the top edge
            groups.setdefault(key, []).append(f'<path d="M{cx} {_f(TOP)}l-4 7h8z"/>')
        else:
            groups.setdefault(key, []).append(f'<circle cx="{cx}" cy="{_f(y(time_us))}" r="3"/>')
    out = []
    for key, shapes in groups.items():
        if not shapes:
            continue
        color = COLORS.get(key, "#000000")
        paint = (
            f'fill="none" stroke="{color}" stroke-width="1.5"'
            if key == "failed"
            else f'fill="{color}" fill-opacity="0.75"'
        )
        out.append(f"<g id={quoteattr('attempts-' + key)} {paint}>")
        out.extend(shapes)
        out.append("</g>")
    return out


def _best_line(baseline_us: float, walk: Sequence[Step], x: Axis, y: Axis) -> str:
    best = baseline_us
    coords = [(x(0), y(best))]
    for index, step in enumerate(walk, 1):
        after = _best_after(step, best)
        if after is not None and after != best:
            coords.append((x(index), y(best)))
            coords.append((x(index), y(after)))
            best = after
    coords.append((x(max(len(walk), 1)), y(best)))
    points = " ".join(f"{_f(px)},{_f(py)}" for px, py in coords)
    return (
        f'<polyline id="best-so-far" points="{points}" fill="none" '
        f'stroke="{COLORS["best"]}" stroke-width="2"/>'
    )


def _legend() -> list[str]:
    items = (
        ("adopt", "adopted"),
        ("no-gain", "no gain"),
        ("rollback", "rolled back"),
        ("failed", "failed (× on the axis)"),
        ("best", "best so far"),
    )
    out = ['<g id="legend">']
    px = LEFT + 4
    for key, label in items:
        out.append(f'<rect x="{px}" y="36" width="10" height="10" fill="{COLORS[key]}"/>')
        out.append(f'<text x="{px + 14}" y="45">{escape(label)}</text>')
        px += 14 + 7 * len(label) + 18  # about 7 units per character at font-size 12
    out.append("</g>")
    return out
