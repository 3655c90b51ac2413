"""The tuning report's chart: a small self-written SVG of time per attempt.

Each measured attempt is a dot coloured by its outcome, with the best-so-far line, the
baseline and the target, the boundaries of the stages, and a marked clip for times above the
plot; the time axis is logarithmic when the times span more than 10x (report_scale.py). The
line labels sit right of the plot and the stage names above it, so no label covers a point.
Coordinates have a fixed format, so the same attempts give the same bytes (the report is
committed to git).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ledger.domain.state import Measurement, State
from ledger.projections.formatting import fmt_num, fmt_time_us
from ledger.projections.report_scale import Scale, nice_step, scale_for
from ledger.projections.timeline import Step, best_after

Axis = Callable[[float], float]

# Chart geometry, in SVG user units: the right margin holds the baseline and target labels
# (about 6.5 units per character at font-size 11), the top one the legend and stage names.
WIDTH, HEIGHT = 900, 440
LEFT, RIGHT, TOP, BOTTOM = 84, 150, 84, 52
CHAR_W = 7  # about 7 units per character at font-size 12
LEGEND_CHAR_W = 6.3  # the legend's labels, measured on the rendered chart (DejaVu Sans)
LABEL_GAP = 13  # the least vertical distance between two line labels
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
    "clipped": "#000000",
    "stage": "#9467bd",
}


def _f(value: float) -> str:
    """A coordinate with one decimal: fixed format, so the bytes never depend on float noise."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


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
    """The SVG chart: each attempt's time, the best so far, the baseline, the target and the
    stage boundaries."""
    op = state.op or "op"
    sheet = state.target
    times = [m.median_us for m in (_plotted(s) for s in walk) if m is not None]
    scale = scale_for(sheet.baseline_us, sheet.target_us, times) if sheet else None
    note = " (log scale)" if scale is not None and scale.log else ""
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(op)}: time per attempt, best so far and target</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="24" font-size="15" font-weight="bold">'
        f"{escape(op)}: time per attempt (µs){note}</text>",
    ]
    if sheet is None or scale is None:
        out.append(
            f'<text x="{LEFT}" y="{TOP + PLOT_H // 2}">No target sheet yet: nothing to '
            "chart.</text>"
        )
        out.append("</svg>")
        return "\n".join(out) + "\n"
    count = max(len(walk), 1)

    def x(index: float) -> float:
        return LEFT + PLOT_W * index / count

    def y(time_us: float) -> float:
        return TOP + PLOT_H * (1.0 - scale.fraction(time_us))

    out.extend(_axes(scale, count, x, y))
    out.extend(_stages(walk, x))
    out.append(_best_line(sheet.baseline_us, walk, x, y))
    points, clipped = _points(walk, scale, x, y)
    out.extend(points)
    out.extend(_line_labels(sheet.baseline_us, sheet.target_us, y))
    out.extend(_legend(clipped))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _plotted(step: Step) -> Measurement | None:
    """The measurement a step plots as a point (none for failures and unfinished attempts)."""
    a = step.attempt
    return a.measurement if a.failure is None and a.verdict is not None else None


def _axes(scale: Scale, count: int, x: Axis, y: Axis) -> list[str]:
    lines = [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + PLOT_H}" stroke="#000000"/>',
        f'<line x1="{LEFT}" y1="{TOP + PLOT_H}" x2="{LEFT + PLOT_W}" y2="{TOP + PLOT_H}" '
        'stroke="#000000"/>',
    ]
    decimals = scale.decimals()
    for value in scale.ticks:
        lines.append(
            f'<line x1="{LEFT}" y1="{_f(y(value))}" x2="{LEFT + PLOT_W}" '
            f'y2="{_f(y(value))}" stroke="#e0e0e0"/>'
        )
        lines.append(
            f'<text x="{LEFT - 6}" y="{_f(y(value) + 4)}" text-anchor="end">'
            f"{fmt_num(value, decimals)}</text>"
        )
    x_step = max(1, int(nice_step(float(count), 8))) if count > 1 else 1
    for index in range(0, count + 1, x_step):
        lines.append(
            f'<text x="{_f(x(index))}" y="{TOP + PLOT_H + 18}" text-anchor="middle">{index}</text>'
        )
    lines.append(
        f'<text x="{LEFT + PLOT_W // 2}" y="{HEIGHT - 12}" text-anchor="middle">'
        "attempt (0 = baseline)</text>"
    )
    return lines


def _stages(walk: Sequence[Step], x: Axis) -> list[str]:
    """A dashed line before the first attempt of each stage after the first, and each stage's
    name above the plot, shortened to the width its attempts take."""
    spans: list[tuple[str, int, int]] = []  # stage, first index, last index (1-based)
    for index, step in enumerate(walk, 1):
        if spans and spans[-1][0] == step.attempt.stage:
            spans[-1] = (spans[-1][0], spans[-1][1], index)
        else:
            spans.append((step.attempt.stage, index, index))
    if not spans:
        return []
    out = ['<g id="stages">']
    for number, (stage, first, last) in enumerate(spans):
        left, right = x(first - 0.5), x(last + 0.5)
        if number > 0:
            out.append(
                f'<line x1="{_f(left)}" y1="{TOP}" x2="{_f(left)}" y2="{TOP + PLOT_H}" '
                f'stroke="{COLORS["stage"]}" stroke-dasharray="4 3"/>'
            )
        name = _fit(stage, right - left)
        if name:
            out.append(
                f'<text x="{_f((left + right) / 2)}" y="{TOP - 6}" text-anchor="middle" '
                f'fill="{COLORS["stage"]}">{escape(name)}</text>'
            )
    out.append("</g>")
    return out


def _fit(name: str, width: float) -> str:
    """`name`, or its first letters, in the width its stage takes on the chart."""
    for text in (name, name[:3] + ".", name[:1]):
        if CHAR_W * len(text) <= width:
            return text
    return ""


def _points(walk: Sequence[Step], scale: Scale, x: Axis, y: Axis) -> tuple[list[str], bool]:
    """The attempts' marks by outcome, and whether any time lay above the plot (clipped)."""
    groups: dict[str, list[str]] = {"adopt": [], "no-gain": [], "rollback": [], "failed": []}
    bottom = TOP + PLOT_H
    clipped = False
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
        if scale.clipped(time_us):  # above the plot: a triangle on the top edge, outlined
            clipped = True
            groups.setdefault(key, []).append(
                f'<path d="M{cx} {_f(TOP)}l-5 8h10z" stroke="{COLORS["clipped"]}">'
                f"<title>{escape(fmt_time_us(time_us))}: above the plot</title></path>"
            )
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
    return out, clipped


def _line_labels(baseline_us: float, target_us: float, y: Axis) -> list[str]:
    """The baseline and target lines across the plot, labelled right of it (never over a
    point), the labels pushed apart when the two lines lie close."""
    out = []
    places = {"baseline": y(baseline_us), "target": y(target_us)}
    label_y = dict(places)
    if abs(label_y["target"] - label_y["baseline"]) < LABEL_GAP:
        middle = (label_y["target"] + label_y["baseline"]) / 2
        lower = "target" if target_us <= baseline_us else "baseline"
        upper = "baseline" if lower == "target" else "target"
        label_y[lower], label_y[upper] = middle + LABEL_GAP / 2, middle - LABEL_GAP / 2
    for name, value, dash in (("baseline", baseline_us, "2 3"), ("target", target_us, "6 4")):
        out.append(
            f'<line id="{name}-line" x1="{_f(LEFT)}" y1="{_f(places[name])}" '
            f'x2="{_f(LEFT + PLOT_W)}" y2="{_f(places[name])}" stroke="{COLORS[name]}" '
            f'stroke-width="1.5" stroke-dasharray="{dash}"/>'
        )
        out.append(
            f'<text x="{_f(LEFT + PLOT_W + 6)}" y="{_f(label_y[name] + 4)}" font-size="11" '
            f'fill="{COLORS[name]}">{name} {escape(fmt_time_us(value))}</text>'
        )
    return out


def _best_line(baseline_us: float, walk: Sequence[Step], x: Axis, y: Axis) -> str:
    best = baseline_us
    coords = [(x(0), y(best))]
    for index, step in enumerate(walk, 1):
        after = best_after(step, best)
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


def _legend(clipped: bool) -> list[str]:
    """The legend in rows above the plot; the clip's entry only when a time was clipped."""
    items = [
        ("adopt", "adopted"),
        ("no-gain", "no gain"),
        ("rollback", "rolled back"),
        ("failed", "failed (× on the axis)"),
        ("best", "best so far"),
        ("stage", "stage boundary"),
    ]
    if clipped:
        items.append(("clipped", "above the plot (▲ on the top edge)"))
    out = ['<g id="legend">']
    px, row = LEFT + 4, 36
    for key, label in items:
        width = 14 + round(LEGEND_CHAR_W * len(label)) + 16
        if px + width > LEFT + PLOT_W + RIGHT - 8:
            px, row = LEFT + 4, row + 16
        if key == "clipped":
            out.append(
                f'<path id="legend-clipped" d="M{px + 5} {row}l-5 9h10z" fill="#ffffff" '
                f'stroke="{COLORS[key]}"/>'
            )
        else:
            out.append(f'<rect x="{px}" y="{row}" width="10" height="10" fill="{COLORS[key]}"/>')
        out.append(f'<text x="{px + 14}" y="{row + 9}">{escape(label)}</text>')
        px += width
    out.append("</g>")
    return out
