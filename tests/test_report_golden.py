"""Golden files of the tuning report and its chart (issue 15 item 12): a campaign across three
stages whose times span more than 10x (a log time axis) with one time above the plot (a
marked clip), rendered byte for byte.

Regenerate after an intended change, then review the diff and look at the chart:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_report_golden.py
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from driver import Driver, candidate, in_point, vec

from ledger.projections import report
from stages import commands as cmd
from stages.policy import effective_policy

DATA = Path(__file__).parent / "data" / "report"
MARKDOWN, CHART = DATA / "softmax_tuning_report.md", DATA / "softmax_tuning_report.svg"
SVG = "{http://www.w3.org/2000/svg}"


def campaign() -> Driver:
    """Baseline 100 µs, target 5 µs; frontend, swimlane and incore attempts down to 6 µs."""
    driver = in_point(baseline=100.0, target=5.0)
    for width, time_us in ((16, 60.0), (32, 400.0), (48, 30.0)):
        driver.verify(driver.start(candidate(vec_tile_shape=vec(width))), time_us)
    driver.run(cmd.ClosePoint(name="F-1", reason="candidates measured"))
    driver.run(cmd.ExitStage(stage="frontend", reason="points closed"))
    driver.run(cmd.UnloadSkill(name="tune-frontend"))
    driver.run(cmd.EnterStage(stage="swimlane"))
    driver.run(cmd.OpenPoint(name="S-1"))
    for value, time_us in (([8, 1], 12.0), ([16, 1], 12.5), ([2, 1], None)):
        attempt = driver.start(cmd.TryMutation(param="unroll_list", value=value))
        if time_us is None:
            driver.run(cmd.Fail(attempt=attempt, category="oom", detail="UB overflow"))
        else:
            driver.verify(attempt, time_us)
    driver.run(cmd.ClosePoint(name="S-1", reason="done"))
    driver.run(cmd.ExitStage(stage="swimlane", reason="points closed"))
    driver.run(cmd.EnterStage(stage="incore"))
    driver.run(cmd.OpenPoint(name="I-1"))
    for mode, time_us in ((1, 6.0), (2, 6.1)):
        driver.verify(driver.start(cmd.TryMutation(param="mode", value=mode)), time_us)
    return driver


def rendered() -> tuple[str, str]:
    state = campaign().replayed()
    return report.render_report(state, None, effective_policy(state))


def test_regenerate_when_asked() -> None:
    """UPDATE_GOLDEN=1 rewrites the report's golden files (review the diff and the picture)."""
    if not os.environ.get("UPDATE_GOLDEN"):
        pytest.skip("set UPDATE_GOLDEN=1 to regenerate")
    markdown, svg = rendered()
    DATA.mkdir(parents=True, exist_ok=True)
    MARKDOWN.write_text(markdown, encoding="utf-8")
    CHART.write_text(svg, encoding="utf-8")


def test_the_report_matches_its_golden_file() -> None:
    assert rendered()[0] == MARKDOWN.read_text(encoding="utf-8")


def test_the_chart_matches_its_golden_file() -> None:
    assert rendered()[1] == CHART.read_text(encoding="utf-8")


def test_the_chart_has_stage_boundaries_a_marked_clip_and_a_log_axis() -> None:
    root = ET.fromstring(rendered()[1])
    title = "".join(root.itertext())
    assert "softmax: time per attempt (µs) (log scale)" in title
    stages = root.find(f".//{SVG}g[@id='stages']")
    assert stages is not None
    assert [t.text for t in stages.iter(f"{SVG}text")] == ["frontend", "swimlane", "incore"]
    assert len(list(stages.iter(f"{SVG}line"))) == 2  # before swimlane and before incore
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert [t for t in titles if t.endswith("above the plot")] == [
        "attempt 2 (e2b8aa69701d): rollback, 400.00 µs; frontend / F-1; candidate from prior "
        "kernel; above the plot"
    ]
    assert root.find(f".//{SVG}path[@id='legend-clipped']") is not None
    legend = [t.text for t in root.find(f".//{SVG}g[@id='legend']").iter(f"{SVG}text")]  # type: ignore[union-attr]
    assert "above the plot (▲ on the top edge)" in legend


def test_line_labels_lie_right_of_the_plot() -> None:
    """No label covers a point: the baseline and target labels start right of the plot."""
    root = ET.fromstring(rendered()[1])
    plot_right = report_chart_right()
    labels = [
        t for t in root.iter(f"{SVG}text") if (t.text or "").startswith(("baseline ", "target "))
    ]
    assert [t.text for t in labels] == ["baseline 100.00 µs", "target 5.00 µs"]
    assert all(float(t.get("x", "0")) > plot_right for t in labels)
    points = [float(c.get("cx", "0")) for c in root.iter(f"{SVG}circle")]
    assert max(points) <= plot_right


def report_chart_right() -> float:
    from ledger.projections import report_chart

    return float(report_chart.LEFT + report_chart.REPORT_SIZE.plot_w)


def test_a_linear_axis_when_the_times_stay_within_10x() -> None:
    driver = in_point(baseline=100.0, target=50.0)
    driver.verify(driver.start(candidate(vec_tile_shape=vec(16))), 60.0)
    state = driver.replayed()
    svg = report.render_report(state, None, effective_policy(state))[1]
    assert "(log scale)" not in svg
    assert "legend-clipped" not in svg


def test_every_mark_names_its_attempt_in_a_title_shown_on_hover() -> None:
    """Each attempt's mark (dot, clip or ×) carries a <title> naming that attempt, so a
    browser shows which attempt it is on hover; the chart itself is an image with a name."""
    state = campaign().replayed()
    root = ET.fromstring(rendered()[1])
    assert root.get("role") == "img" and root.get("aria-labelledby") == "chart-title"
    marks = [
        mark
        for group in root.iter(f"{SVG}g")
        if (group.get("id") or "").startswith("attempts-")
        for mark in group
    ]
    named = sorted(
        (mark.find(f"{SVG}title").text or "").split(" (")[0]  # type: ignore[union-attr]
        for mark in marks
    )
    assert named == sorted(f"attempt {a.seq}" for a in state.attempts.values())


def test_a_larger_size_keeps_every_mark_inside_the_plot() -> None:
    """The dashboard's larger chart scales the plot, not the margins: marks stay inside."""
    from ledger.projections import report_chart
    from ledger.projections.timeline import steps

    state = campaign().replayed()
    size = report_chart.ChartSize(1200, 560)
    root = ET.fromstring(report_chart.chart_svg(state, steps(state), size))
    assert (root.get("width"), root.get("height")) == ("1200", "560")
    xs = [float(c.get("cx", "0")) for c in root.iter(f"{SVG}circle")]
    assert min(xs) > report_chart.LEFT and max(xs) <= report_chart.LEFT + size.plot_w
    assert max(xs) > report_chart.LEFT + report_chart.REPORT_SIZE.plot_w  # it did grow
