"""The dashboard's pure renderer: escaping, accessible structure, colours, and its own policy."""

from __future__ import annotations

import base64
import hashlib
import itertools
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from test_report_golden import campaign as three_stage_campaign

from ledger.projections import dashboard_assets as assets
from ledger.projections import (
    dashboard_index_html,
    dashboard_page,
    dashboard_page_html,
    dashboard_rows,
)
from ledger.projections.report_chart import COLORS, REPORT_SIZE, chart_svg
from ledger.projections.timeline import steps

CLEAN_REPORT = {"findings": [], "provenance": {"measured": 2, "reported": 8}}
STATE = three_stage_campaign().replayed()


class Page(HTMLParser):
    """What a page holds: its tags in order, heading levels, table headers, text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def headings(self) -> list[int]:
        return [int(tag[1]) for tag, _ in self.tags if re.fullmatch(r"h[1-6]", tag)]


def softmax_page() -> str:
    state = three_stage_campaign().replayed()
    view = dashboard_rows.op_view("softmax", state, CLEAN_REPORT, None)
    return dashboard_page_html.render_op_page(
        dashboard_page.op_page(view, state, CLEAN_REPORT), ".."
    )


def contrast(foreground: str, background: str) -> float:
    """The WCAG contrast ratio of two #rrggbb colours."""

    def luminance(color: str) -> float:
        channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_formula_matches_known_values() -> None:
    """The ratio formula gives WCAG's reference values (so the checks below can fail)."""
    assert round(contrast("#000000", "#ffffff"), 1) == 21.0
    assert round(contrast("#767676", "#ffffff"), 2) == 4.54
    assert contrast("#7f7f7f", "#ffffff") < 4.5


def test_every_text_colour_has_at_least_4_5_to_1_contrast() -> None:
    """Each text colour of the style on its background, and each text colour of the chart on
    white, reads at 4.5:1 or more (WCAG 1.4.3)."""
    low = {
        name: round(contrast(fg, bg), 2)
        for name, (fg, bg) in assets.TEXT_COLORS.items()
        if contrast(fg, bg) < 4.5
    }
    assert low == {}
    svg = ET.fromstring(chart_svg(STATE, steps(STATE), REPORT_SIZE))
    fills = {t.get("fill", "#000000") for t in svg.iter("{http://www.w3.org/2000/svg}text")}
    assert len(fills) >= 3  # black, the baseline's, the target's, the stages'
    assert {
        f: round(contrast(f, "#ffffff"), 2) for f in fills if contrast(f, "#ffffff") < 4.5
    } == {}


def test_every_mark_colour_has_at_least_3_to_1_contrast() -> None:
    """The chart's marks and lines stand out from white at 3:1 or more (WCAG 1.4.11)."""
    low = {
        k: round(contrast(c, "#ffffff"), 2) for k, c in COLORS.items() if contrast(c, "#ffffff") < 3
    }
    assert low == {}


def test_the_style_uses_only_the_checked_colours() -> None:
    """Every colour in the style is one whose contrast is checked (or a border, or white)."""
    used = set(re.findall(r"#[0-9a-fA-F]{6}\b", assets.STYLE))
    checked = {c for pair in assets.TEXT_COLORS.values() for c in pair}
    assert used <= checked | {assets.BORDER, "#ffffff", "#000000"}


def test_the_policy_allows_exactly_the_inline_style_and_script() -> None:
    """The Content-Security-Policy names the sha256 of the style and script the page holds,
    so the browser runs them and nothing else; nothing may load from anywhere."""
    page = softmax_page()
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    script = page.split("<script>", 1)[1].split("</script>", 1)[0]

    def sha(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"style-src 'sha256-{sha(style)}'" in assets.CSP
    assert f"script-src 'sha256-{sha(script)}'" in assets.CSP
    assert "default-src 'none'" in assets.CSP


def test_headings_descend_one_level_at_a_time() -> None:
    """One h1, and no heading skips a level (h1 → h3), on the op page and the index."""
    state = three_stage_campaign().replayed()
    view = dashboard_rows.op_view("softmax", state, CLEAN_REPORT, None)
    for text in (softmax_page(), dashboard_index_html.render_index([view])):
        levels = Page(text).headings()
        assert levels[0] == 1 and levels.count(1) == 1
        assert all(b - a <= 1 for a, b in itertools.pairwise(levels)), levels


def test_every_table_header_has_a_scope() -> None:
    """Each <th> says whether it heads a column or a row (screen readers read cells by it)."""
    page = Page(softmax_page())
    headers = [attrs for tag, attrs in page.tags if tag == "th"]
    assert len(headers) > 20
    assert all(attrs.get("scope") in ("col", "row") for attrs in headers)


def test_the_chart_is_an_image_with_a_name() -> None:
    """The inline chart is announced as one image named by its title."""
    page = softmax_page()
    svg = next(attrs for tag, attrs in Page(page).tags if tag == "svg")
    assert svg.get("role") == "img" and svg.get("aria-labelledby") == "chart-title"
    assert '<title id="chart-title">softmax: time per attempt' in page


def test_a_state_without_what_issues_27_and_29_record_shows_none_of_it() -> None:
    """A ledger with no person's decision, no device and no kept kernel says so: no decision,
    device "unknown", its activated kernel "not kept", no diff; nothing is invented."""
    state = three_stage_campaign().replayed()
    summary = dashboard_rows.op_view("softmax", state, CLEAN_REPORT, None).summary
    assert summary is not None
    assert (summary.person_decisions, summary.device) == ((), "unknown")
    kernels = dashboard_page.op_page(
        dashboard_rows.op_view("s", state, CLEAN_REPORT, None), state, {}
    ).kernels
    assert kernels == (dashboard_page.KernelVersion("impl-digest-1", None, None, False, None),)
    page = softmax_page()
    assert '<th scope="row">best measured on</th><td>unknown</td>' in page
    assert "not kept: restore it from git" in page and "<details>" not in page
    assert "None: every step followed the protocol&#x27;s guards." in page


TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
BASE = dashboard_page.op_page(
    dashboard_rows.op_view("softmax", STATE, CLEAN_REPORT, None), STATE, CLEAN_REPORT
)


def with_texts(problems: list[str], notes: list[str]) -> str:
    """The softmax page with these audit findings and notes."""
    view = attrs.evolve(BASE.view, health="findings", problems=tuple(problems), code=7)
    return dashboard_page_html.render_op_page(
        attrs.evolve(BASE, view=view, notes=tuple(notes)), ".."
    )


@settings(max_examples=60, deadline=None)
@given(problems=st.lists(TEXT, min_size=1, max_size=3), notes=st.lists(TEXT, max_size=3))
def test_any_ledger_text_arrives_as_the_same_text_and_no_markup(
    problems: list[str], notes: list[str]
) -> None:
    """Whatever a ledger's text holds, the page shows exactly it and gains no tag from it: its
    tags are those of the same page with plain words in its place."""
    page = Page(with_texts(problems, notes))
    plain = Page(with_texts(["x"] * len(problems), ["x"] * len(notes)))
    assert [tag for tag, _ in page.tags] == [tag for tag, _ in plain.tags]
    shown = "".join(page.text)
    assert all(item in shown for item in [*problems, *notes])
