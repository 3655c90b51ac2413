"""The tuning report's chart: a small self-written SVG of time per attempt.

Each measured attempt is a dot coloured by its outcome, with the best-so-far line, the
baseline and the target, the boundaries of the stages, and a marked clip for times above the
plot; the time axis is logarithmic when the times span more than 10x (report_scale.py). The
line labels sit right of the plot and the stage names above it, so no label covers a point.
Each mark carries a `<title>` (a browser shows it on hover) naming the attempt, its outcome,
time and change. The report draws it at `REPORT_SIZE`, the dashboard larger (`chart_svg`'s
`size`). Coordinates have a fixed format, so the same attempts give the same bytes (the report
is committed to git).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import frozen

from ledger.domain.state import Measurement, State
from ledger.log.codec import canonical_json
from ledger.projections.formatting import fmt_num, fmt_time_us, one_line, truncate
from ledger.projections.report_scale import Scale, nice_step, scale_for
from ledger.projections.timeline import Step, best_after, outcome
from ledger.schema.vocabulary import ADOPTED

Axis = Callable[[float], float]

# Chart margins, in SVG user units: the right one holds the baseline and target labels
# (about 6.5 units per character at font-size 11), the top one the legend and stage names.
LEFT, RIGHT, TOP, BOTTOM = 84, 150, 84, 52
CHAR_W = 7  # about 7 units per character at font-size 12
LEGEND_CHAR_W = 6.3  # the legend's labels, measured on the rendered chart (DejaVu Sans)
LABEL_GAP = 13  # the least vertical distance between two line labels
HOVER_CHANGE = 120  # characters of an attempt's change in its mark's title
# Colours on the white background: text (the baseline, target and stage labels) at least
# 4.5:1, marks and lines at least 3:1 (WCAG 1.4.3 and 1.4.11; tests/test_dashboard_html.py).
COLORS = {
    "adopt": "#2ca02c",
    "target-reached": "#2ca02c",
    "no-gain": "#7f7f7f",
    "rollback": "#e66100",
    "failed": "#d62728",
    "best": "#1f77b4",
    "target": "#d62728",
    "baseline": "#666666",
    "clipped": "#000000",
    "stage": "#6a3d9a",
}


@frozen
class ChartSize:
    """The chart's width and height in SVG user units; the margins are fixed."""

    width: int
    height: int

    @property
    def plot_w(self) -> int:
        """The plot's width, between the left and right margins."""
        return self.width - LEFT - RIGHT

    @property
    def plot_h(self) -> int:
        """The plot's height, between the top and bottom margins."""
        return self.height - TOP - BOTTOM


REPORT_SIZE = ChartSize(900, 440)


def _f(value: float) -> str:
    """A coordinate with one decimal: fixed format, so the bytes never depend on float noise."""
    return fmt_num(value, 1)


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
    """The report's SVG file: `chart_svg` at the report's size, as a standalone document."""
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + chart_svg(state, walk, REPORT_SIZE)


def chart_svg(state: State, walk: Sequence[Step], size: ChartSize) -> str:
    """The `<svg>` element of the chart at `size`: each attempt's time, the best so far, the
    baseline, the target and the stage boundaries (a page may hold it inline)."""
    op = state.op or "op"
    sheet = state.target
    times = [m.median_us for m in (_plotted(s) for s in walk) if m is not None]
    scale = scale_for(sheet.baseline_us, sheet.target_us, times) if sheet else None
    note = " (log scale)" if scale is not None and scale.log else ""
    width, height = size.width, size.height
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12" '
        'role="img" aria-labelledby="chart-title">',
        f'<title id="chart-title">{escape(op)}: time per attempt, best so far and target</title>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="24" font-size="15" font-weight="bold">'
        f"{escape(op)}: time per attempt (µs){note}</text>",
    ]
    if sheet is None or scale is None:
        out.append(
            f'<text x="{LEFT}" y="{TOP + size.plot_h // 2}">No target sheet yet: nothing to '
            "chart.</text>"
        )
        out.append("</svg>")
        return "\n".join(out) + "\n"
    count = max(len(walk), 1)

    def x(index: float) -> float:
        return LEFT + size.plot_w * index / count

    def y(time_us: float) -> float:
        return TOP + size.plot_h * (1.0 - scale.fraction(time_us))

    out.extend(_axes(scale, count, size, x, y))
    out.extend(_stages(walk, size, x))
    out.append(_best_line(sheet.baseline_us, walk, x, y))
    points, clipped = _points(walk, scale, size, x, y)
    out.extend(points)
    out.extend(_line_labels(sheet.baseline_us, sheet.target_us, size, y))
    out.extend(_legend(clipped, size))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def hover_text(step: Step) -> str:
    """What a mark's title says: the attempt, its outcome and time, where and what it changed."""
    attempt = step.attempt
    m = attempt.measurement
    time = f", {fmt_time_us(m.median_us)}" if m is not None else ""
    where = one_line(attempt.stage + (f" / {attempt.point}" if attempt.point else ""))
    if attempt.kind == "mutation":
        change = f"{attempt.param}={canonical_json(attempt.value)}"
    elif attempt.kind == "algorithm":
        change = f"algorithm: {attempt.description or ''}"
    else:
        change = f"candidate from {attempt.prior or 'an unknown prior'}"
    change = truncate(one_line(change), HOVER_CHANGE)
    return f"attempt {attempt.seq} ({attempt.id}): {outcome(attempt)}{time}; {where}; {change}"


def _plotted(step: Step) -> Measurement | None:
    """The measurement a step plots as a point (none for failures and unfinished attempts)."""
    a = step.attempt
    return a.measurement if a.failure is None and a.verdict is not None else None


def _axes(scale: Scale, count: int, size: ChartSize, x: Axis, y: Axis) -> list[str]:
    bottom, right = TOP + size.plot_h, LEFT + size.plot_w
    lines = [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#000000"/>',
        f'<line x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#000000"/>',
    ]
    decimals = scale.decimals()
    for value in scale.ticks:
        lines.append(
            f'<line x1="{LEFT}" y1="{_f(y(value))}" x2="{right}" '
            f'y2="{_f(y(value))}" stroke="#e0e0e0"/>'
        )
        lines.append(
            f'<text x="{LEFT - 6}" y="{_f(y(value) + 4)}" text-anchor="end">'
            f"{fmt_num(value, decimals)}</text>"
        )
    x_step = max(1, int(nice_step(float(count), 8))) if count > 1 else 1
    for index in range(0, count + 1, x_step):
        lines.append(
            f'<text x="{_f(x(index))}" y="{bottom + 18}" text-anchor="middle">{index}</text>'
        )
    lines.append(
        f'<text x="{LEFT + size.plot_w // 2}" y="{size.height - 12}" text-anchor="middle">'
        "attempt (0 = baseline)</text>"
    )
    return lines


def _stages(walk: Sequence[Step], size: ChartSize, x: Axis) -> list[str]:
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
                f'<line x1="{_f(left)}" y1="{TOP}" x2="{_f(left)}" y2="{TOP + size.plot_h}" '
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


def _points(
    walk: Sequence[Step], scale: Scale, size: ChartSize, x: Axis, y: Axis
) -> tuple[list[str], bool]:
    """The attempts' marks by outcome, each titled with its attempt (shown on hover), and
    whether any time lay above the plot (clipped)."""
    groups: dict[str, list[str]] = {"adopt": [], "no-gain": [], "rollback": [], "failed": []}
    bottom = TOP + size.plot_h
    clipped = False
    for index, step in enumerate(walk, 1):
        attempt = step.attempt
        cx = _f(x(index))
        title = f"<title>{escape(hover_text(step))}</title>"
        if attempt.failure is not None or (
            attempt.measurement is None and attempt.status == "failed"
        ):
            groups["failed"].append(
                f'<path d="M{_f(x(index) - 3)} {_f(bottom - 9)}l6 6m0 -6l-6 6">{title}</path>'
            )
            continue
        if attempt.measurement is None or attempt.verdict is None:
            continue  # pending or abandoned: nothing measured to plot
        key = "adopt" if attempt.verdict in ADOPTED else attempt.verdict
        time_us = attempt.measurement.median_us
        if scale.clipped(time_us):  # above the plot: a triangle on the top edge, outlined
            clipped = True
            groups.setdefault(key, []).append(
                f'<path d="M{cx} {_f(TOP)}l-5 8h10z" stroke="{COLORS["clipped"]}">'
                f"<title>{escape(hover_text(step))}; above the plot</title></path>"
            )
        else:
            groups.setdefault(key, []).append(
                f'<circle cx="{cx}" cy="{_f(y(time_us))}" r="3">{title}</circle>'
            )
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


def _line_labels(baseline_us: float, target_us: float, size: ChartSize, y: Axis) -> list[str]:
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
            f'x2="{_f(LEFT + size.plot_w)}" y2="{_f(places[name])}" stroke="{COLORS[name]}" '
            f'stroke-width="1.5" stroke-dasharray="{dash}"/>'
        )
        out.append(
            f'<text x="{_f(LEFT + size.plot_w + 6)}" y="{_f(label_y[name] + 4)}" font-size="11" '
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


def _legend(clipped: bool, size: ChartSize) -> list[str]:
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
        if px + width > size.width - 8:
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
