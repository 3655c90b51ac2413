"""The dashboard in a real browser: Debian's chromium, driven by Playwright, opening the site
from `file://` with every request recorded.

The site is built from real ledgers: the small repository of tests/dashboard_ops.py (three
stages, hostile text, a damaged ledger), a campaign run command by command through the API,
and the bundled ops' ledgers when the main job has left them in custom/. Screenshots go to
tests/artifacts/dashboard/ (ignored by git); each test prints where.

Without /usr/bin/chromium or the playwright package these tests are skipped with the reason,
unless TUNE_LEDGER_BROWSER_TESTS=1 (CI sets it: .ci/run installs chromium), which makes them
fail instead. The browser is launched from Debian's package; `playwright install` is never run.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from dashboard_ops import HOSTILE, api_campaign, write_repository

from ledger.projections.formatting import fmt_time_us
from ledger.shell import dashboard as site
from ledger.shell.api import OpLedger

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REQUIRED = os.environ.get("TUNE_LEDGER_BROWSER_TESTS") == "1"
ARTIFACTS = REPO / "tests" / "artifacts" / "dashboard"
BUNDLED = ("softmax", "matmul_bias_relu")


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def playwright_browser() -> Iterator[Any]:
    """Debian's chromium, headless, launched by Playwright (skipped, or failed when required,
    without it)."""
    missing = _missing()
    if missing is not None:
        if REQUIRED:
            pytest.fail(f"{missing}; TUNE_LEDGER_BROWSER_TESTS=1 makes the browser tests required")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A root with the small repository and an API-driven campaign; its dashboard written to
    ROOT/tune-ledger-dashboard."""
    root = tmp_path_factory.mktemp("repository")
    write_repository(root)
    api_campaign(root, "generated", 40)
    site.build(root, root / site.DEFAULT_OUT)
    return root


class Visit:
    """A browser tab that records every request, console error, page error and dialog."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on(
            "console",
            lambda message: self.errors.append(message.text) if message.type == "error" else None,
        )
        page.on("pageerror", lambda error: self.errors.append(str(error)))

        def dialog(opened: Any) -> None:
            self.dialogs.append(opened.message)
            opened.dismiss()

        page.on("dialog", dialog)

    def open(self, path: Path) -> Any:
        """Open a file of the site by its file:// URL."""
        self.page.goto(path.as_uri())
        return self.page

    def screenshot(self, name: str, *, full: bool = False) -> Path:
        """Save a screenshot as a test artefact and print where it is."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=full)
        print(f"screenshot: {path}")
        return path


@pytest.fixture
def visit(playwright_browser: Any) -> Iterator[Visit]:
    """A fresh tab; after the test, no console error and no request but file:// ones."""
    context = playwright_browser.new_context(viewport={"width": 1400, "height": 900})
    tab = Visit(context.new_page())
    yield tab
    context.close()
    assert tab.errors == [], tab.errors
    assert all(url.startswith("file://") for url in tab.requests), tab.requests


def ops_of(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "custom").iterdir())


def test_the_index_lists_every_op_with_its_best(repository: Path, visit: Visit) -> None:
    """Each op has a row; each readable op's row shows the best `status` reports, the damaged
    one says so with audit's message."""
    index = repository / site.DEFAULT_OUT / "index.html"
    page = visit.open(index)
    assert visit.requests == [index.as_uri()]  # the page alone: no style, font or script fetched
    visit.screenshot("index")
    rows = {
        row.query_selector("th").inner_text(): row.inner_text()
        for row in page.query_selector_all("#ops tbody tr")
    }
    assert sorted(rows) == ops_of(repository)
    assert "damaged" in rows["broken"] and "content id does not match" in rows["broken"]
    for op, text in rows.items():
        if op == "broken":
            continue
        best = OpLedger(repository, op).load().state.best
        assert best is not None
        assert fmt_time_us(best.time_us) in text, (op, text)


def _bundled_campaigns(tmp_path: Path) -> tuple[Path, list[str]]:
    """The root whose bundled ops have ledgers: this repository once the main job (README line
    1) ran here; else a copy of the bundled op folders where a short real campaign runs now
    (PyPTO on the simulator, a few attempts each), as a fresh clone in CI has none."""
    ran = [op for op in BUNDLED if (REPO / "custom" / op / "events.jsonl").exists()]
    if ran:
        return REPO, ran
    pytest.importorskip("pypto")
    root = tmp_path / "repo"
    for op in BUNDLED:
        shutil.copytree(
            REPO / "custom" / op, root / "custom" / op, ignore=shutil.ignore_patterns("__pycache__")
        )
    argv = [sys.executable, "-m", "tools.autopilot", "--root", str(root), "--max-attempts", "3"]
    argv += ["--workers", "1", *itertools.chain.from_iterable(("--op", op) for op in BUNDLED)]
    env = {**os.environ, "TUNE_LEDGER_MEASURE_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return root, list(BUNDLED)


@pytest.mark.slow  # real PyPTO campaigns when the main job has not run in this checkout
def test_the_bundled_ops_are_listed_with_their_bests(tmp_path: Path, visit: Visit) -> None:
    """The dashboard of the bundled ops' campaigns (the site written elsewhere) lists each
    with the best `status` reports, and audit finds them clean."""
    root, ran = _bundled_campaigns(tmp_path)
    out = tmp_path / "site"
    site.build(root, out)
    page = visit.open(out / "index.html")
    visit.screenshot("index-bundled")
    rows = {
        row.query_selector("th").inner_text(): row.inner_text()
        for row in page.query_selector_all("#ops tbody tr")
    }
    for op in ran:
        best = OpLedger(root, op).load().state.best
        assert best is not None and fmt_time_us(best.time_us) in rows[op], (op, rows.get(op))
        assert rows[op].split("\t")[1] == "clean"


def test_each_op_page_opens_from_the_index(repository: Path, visit: Visit) -> None:
    """Following each row's link opens that op's page from file://, titled with the op."""
    index = repository / site.DEFAULT_OUT / "index.html"
    page = visit.open(index)
    for op in ops_of(repository):
        page.click(f"#ops tbody th a:text-is('{op}')")
        assert page.url.startswith("file://") and page.url.endswith(f"/ops/{op}.html")
        assert page.inner_text("h1") == op
        links = page.eval_on_selector_all(
            "h2:text-is('Files') + table a", "links => links.map(a => a.href)"
        )
        assert [url.split("/")[-1] for url in links] == ["MEMORY.md", "events.jsonl"]
        assert all(Path(unquote(urlparse(url).path)).is_file() for url in links), links
        visit.screenshot(f"op-{op}")
        if op == "softmax":
            visit.screenshot("op-softmax-full", full=True)
        page.click("header a")  # "All ops"
        assert page.url == index.as_uri()


def test_the_attempts_filter_shows_only_matching_rows(repository: Path, visit: Visit) -> None:
    """Typing in the filter and choosing an outcome hide every other attempt, and the count
    says how many are shown; clearing both shows them all again."""
    page = visit.open(repository / site.DEFAULT_OUT / "ops" / "generated.html")
    rows = page.locator("#attempts tbody tr")
    total = rows.count()
    assert total == len(OpLedger(repository, "generated").load().state.attempts) > 30

    def shown() -> list[str]:
        return [rows.nth(i).inner_text() for i in range(total) if rows.nth(i).is_visible()]

    page.select_option("#attempts-outcome", "adopt")
    adopted = shown()
    assert adopted and all("\tadopt\t" in row for row in adopted)
    assert page.inner_text("#attempts-count") == f"{len(adopted)} of {total} shown"
    page.select_option("#attempts-outcome", "")
    page.fill("#attempts-filter", "swimlane")
    visit.screenshot("filter-swimlane")
    matching = shown()
    assert 0 < len(matching) < total and all("swimlane" in row for row in matching)
    page.fill("#attempts-filter", "")
    assert len(shown()) == total


def test_hostile_ledger_text_runs_nothing_and_reads_as_written(
    repository: Path, visit: Visit
) -> None:
    """A ledger whose texts are script and tags opens no dialog, loads no image, and shows
    those texts literally."""
    page = visit.open(repository / site.DEFAULT_OUT / "ops" / "hostile.html")
    visit.screenshot("op-hostile")
    page.locator("h2:text-is('Target sheet')").scroll_into_view_if_needed()
    visit.screenshot("op-hostile-target-sheet")
    assert visit.dialogs == []
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 1  # the filter script, nothing of the ledger's
    notes = page.locator("h2:text-is('Notes') + ul li").all_inner_texts()
    assert notes == [HOSTILE]


def test_each_chart_mark_names_its_attempt_on_hover(repository: Path, visit: Visit) -> None:
    """The chart is an image named by its title; each mark's title names its attempt."""
    page = visit.open(repository / site.DEFAULT_OUT / "ops" / "softmax.html")
    chart = page.locator("figure.chart svg")
    assert chart.get_attribute("role") == "img"
    assert page.locator("#chart-title").text_content().startswith("softmax: time per attempt")
    marks = page.locator("figure.chart g[id^='attempts-'] > *")
    titles = [marks.nth(i).locator("title").text_content() for i in range(marks.count())]
    assert sorted(t.split(" (")[0] for t in titles) == [f"attempt {n}" for n in range(1, 9)]
    marks.first.hover()
    visit.screenshot("chart-hover")


CONTRAST_JS = """
() => {
  const rgb = (s) => (s.match(/[0-9.]+/g) || []).slice(0, 4).map(Number);
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const out = [];
  document.querySelectorAll("h1, h2, p, a, th, td, span, label, li, figcaption").forEach((el) => {
    if (!el.textContent.trim()) return;
    out.push([el.tagName + "." + el.className, rgb(getComputedStyle(el).color).slice(0, 3),
              background(el)]);
  });
  return out;
}
"""


def ratio(foreground: list[float], background: list[float]) -> float:
    def luminance(color: list[float]) -> float:
        channels = [c / 255 for c in color]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("page_name", ["index.html", "ops/softmax.html", "ops/broken.html"])
def test_accessible_basics(repository: Path, visit: Visit, page_name: str) -> None:
    """Headings in order from one h1, every table header scoped, labelled filter controls, and
    every text element's colours as the browser computes them at 4.5:1 or more."""
    page = visit.open(repository / site.DEFAULT_OUT / page_name)
    levels = page.evaluate(
        "() => [...document.querySelectorAll('h1,h2,h3,h4,h5,h6')].map(h => +h.tagName[1])"
    )
    assert levels[0] == 1 and levels.count(1) == 1
    assert all(b - a <= 1 for a, b in itertools.pairwise(levels)), levels
    scopes = page.evaluate("() => [...document.querySelectorAll('th')].map(th => th.scope)")
    assert scopes and set(scopes) <= {"col", "row"}
    unlabelled = page.evaluate(
        "() => [...document.querySelectorAll('input, select')]"
        ".filter(e => !document.querySelector(`label[for='${e.id}']`)).length"
    )
    assert unlabelled == 0
    texts = page.evaluate(CONTRAST_JS)
    assert len(texts) > 10
    low = {(name, tuple(fg), tuple(bg)) for name, fg, bg in texts if ratio(fg, bg) < 4.5}
    assert low == set()


def test_kernel_diffs_open_and_evidence_leads_to_its_attempt(
    repository: Path, visit: Visit
) -> None:
    """On an op with kept kernels, each diff opens from its <details> and shows the kernel's
    text as written (a hostile line included, running nothing); a relaxation's evidence link
    scrolls to its attempt's row."""
    page = visit.open(repository / site.DEFAULT_OUT / "ops" / "layernorm.html")
    summaries = page.locator("details summary")
    assert summaries.count() == 2
    summaries.nth(1).click()
    diff = page.locator("details pre.diff").nth(1)
    assert diff.is_visible() and HOSTILE in diff.inner_text()
    assert not page.locator("details pre.diff").nth(0).is_visible()
    visit.screenshot("op-layernorm-kernel-diff")
    link = page.locator("h3:text-is('Relaxations') + table a").first
    link.click()
    target = page.locator("tr:target")
    assert target.count() == 1 and target.get_attribute("id") == link.get_attribute(
        "href"
    ).removeprefix("#")
    visit.screenshot("op-layernorm-evidence")
    assert visit.dialogs == [] and page.locator("img").count() == 0
