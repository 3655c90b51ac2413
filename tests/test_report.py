"""The tuning report: deterministic Markdown and a well-formed, self-written SVG chart."""

from __future__ import annotations

import copy
import re
import xml.etree.ElementTree as ET

import memory_states as ms
from driver import candidate, in_point, vec
from markdown_it import MarkdownIt

from ledger.domain.state import State
from ledger.projections import report
from ledger.projections.timeline import is_failed
from stages import commands as cmd
from stages.policy import effective_policy

SVG = "{http://www.w3.org/2000/svg}"
MD = MarkdownIt("commonmark").enable("table")


def render(state: State) -> tuple[str, str]:
    """The report of `state` with its effective policy."""
    return report.render_report(state, None, effective_policy(state))


def _section(markdown: str, title: str) -> str:
    start = markdown.index(f"## {title}\n")
    end = markdown.find("\n## ", start + 1)
    return markdown[start : end if end >= 0 else len(markdown)]


def _line_y(root: ET.Element, element_id: str) -> float:
    line = root.find(f".//{SVG}line[@id='{element_id}']")
    assert line is not None, element_id
    assert line.get("y1") == line.get("y2")
    return float(line.get("y1", "nan"))


def test_report_is_deterministic() -> None:
    """The same campaign gives the same Markdown and SVG bytes, with no timestamps."""
    first = render(ms.campaign(300))
    assert first == render(ms.campaign(300))
    assert first == render(copy.deepcopy(ms.campaign(300)))
    for text in first:
        assert not re.search(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2}", text)


def test_svg_is_well_formed_with_target_baseline_and_best_lines() -> None:
    """The chart parses as XML and draws the target below the baseline and a falling best."""
    state = ms.campaign(200)
    _markdown, svg = render(state)
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    target_y, baseline_y = _line_y(root, "target-line"), _line_y(root, "baseline-line")
    assert target_y > baseline_y  # SVG y grows downwards: the faster target is lower
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert "target 500.00 µs" in labels and "baseline 2000.00 µs" in labels
    best = root.find(f".//{SVG}polyline[@id='best-so-far']")
    assert best is not None
    points = [tuple(map(float, p.split(","))) for p in best.get("points", "").split()]
    ys = [y for _x, y in points]
    assert ys[0] == baseline_y and ys == sorted(ys)  # the best only ever improves
    adopted = [a for a in state.attempts.values() if a.verdict == "adopt"]
    assert len(points) == 2 + 2 * len(adopted)


def test_svg_draws_one_mark_per_attempt() -> None:
    """Every measured attempt is a dot (or a triangle when off the chart), every failure an x."""
    state = ms.campaign(120)
    root = ET.fromstring(render(state)[1])
    drawn = {g.get("id"): len(list(g)) for g in root.iter(f"{SVG}g") if g.get("id")}
    failures = sum(1 for a in state.attempts.values() if a.failure is not None)
    measured = [a for a in state.attempts.values() if a.failure is None and a.measurement]
    assert drawn["attempts-failed"] == failures
    assert sum(drawn.get(f"attempts-{k}", 0) for k in ("adopt", "no-gain", "rollback")) == len(
        measured
    )


def test_markdown_summarises_baseline_best_gap_and_refers_to_the_chart() -> None:
    """Summary, chart reference, text fallback, stages, adopted and failed tables are there."""
    state = ms.campaign(1000)
    markdown, _svg = render(state)
    assert (
        "![Time per attempt with the best so far and the target](softmax_tuning_report.svg)"
        in markdown
    )
    summary = _section(markdown, "Summary")
    assert "| Required speedup | 4.00× (Baseline / Target; the seed's" in summary
    assert state.best is not None
    assert f"| Best | {state.best.time_us:.2f} µs" in summary
    assert "| Gap to target | best is" in summary
    fallback = _section(markdown, "Time per attempt")
    assert ms.table_rows(fallback) == [report.CHART_BINS]
    assert fallback.rstrip().endswith(f"| {state.best.time_us:.2f} µs |")
    assert ms.table_rows(_section(markdown, "Per stage")) == [3]
    adopted = [a for a in state.attempts.values() if a.verdict == "adopt"]
    assert ms.table_rows(_section(markdown, "Adopted changes")) == [len(adopted)]
    failed = [a for a in state.attempts.values() if is_failed(a)]
    rows = ms.table_rows(_section(markdown, "Failed and rolled-back attempts"))
    assert rows[0] == min(len(failed), report.REPORT_FAILED_ROWS) and len(rows) == 2


def test_report_without_target_sheet_or_attempts() -> None:
    """An op without a sheet still gets a report and a valid (empty) chart."""
    for state in (ms.fresh(), ms.activated(), ms.with_sheet()):
        markdown, svg = render(state)
        ET.fromstring(svg)
        assert markdown.startswith("# softmax: tuning report\n")
    assert "No target sheet yet" in render(ms.fresh())[1]


def test_hostile_text_keeps_report_tables_and_svg_intact() -> None:
    """User text with pipes, newlines and markup neither splits cells nor breaks the XML."""
    state = ms.hostile(ms.campaign(80))
    state.op = "a<b&c"
    markdown, svg = render(state)
    ET.fromstring(svg)
    children = [c for t in MD.parse(markdown) if t.children for c in t.children]
    assert not [c for c in children if c.type == "html_inline"]
    assert "<!--" not in markdown


def test_report_of_a_replayed_campaign() -> None:
    """A campaign run through the deciders and replay reports its adoption and failure."""
    driver = in_point()
    first = driver.start(candidate(vec_tile_shape=vec(16)))
    driver.verify(first, 80.0)
    second = driver.start(cmd.TryMutation(param="unroll_list", value=[8, 4, 1]))
    driver.run(cmd.Fail(attempt=second, category="oom", detail="UB 2 MB"))
    markdown, svg = render(driver.replayed())
    assert f"`{first}`" in _section(markdown, "Adopted changes")
    assert f"`{second}`" in _section(markdown, "Failed and rolled-back attempts")
    assert "| Speed-up reached | 1.25× |" in markdown
    root = ET.fromstring(svg)
    assert _line_y(root, "target-line") > _line_y(root, "baseline-line")
