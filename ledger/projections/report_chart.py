"""The tuning report's chart: a small self-written SVG of time per attempt.

Each measured attempt is a dot coloured by its outcome, with the best-so-far line, the
baseline and the target. Coordinates have a fixed format, so the same attempts give the same
bytes (the report is committed to git).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ledger.domain.state import State
from ledger.projections.formatting import fmt_num, fmt_time_us
from ledger.projections.timeline import Step, best_after

Axis = Callable[[float], float]

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
