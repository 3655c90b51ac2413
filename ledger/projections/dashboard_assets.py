"""The dashboard's page frame: its colours, inline style and filter script, and the document
around a page's body.

Everything a page needs is inline, so it opens from `file://` with no network: no fonts, no
images, no script or style from elsewhere. The Content-Security-Policy names the one style and
the one script by their sha256, so nothing else can run or load even if a ledger's text ever
got past the escaping; links to other files (MEMORY.md, the ledger) stay plain navigation.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

# Every colour of the style, with the background it is read on. Text pairs need at least
# 4.5:1 (WCAG 1.4.3); tests/test_dashboard_html.py computes each ratio.
TEXT_COLORS: dict[str, tuple[str, str]] = {
    "text": ("#1a1a1a", "#ffffff"),
    "muted": ("#595959", "#ffffff"),
    "link": ("#0b57d0", "#ffffff"),
    "header text": ("#1a1a1a", "#f2f2f2"),
    "clean": ("#1a7f37", "#ffffff"),
    "problem": ("#b00020", "#ffffff"),
    "damaged row": ("#1a1a1a", "#fde8ea"),
    "damaged link": ("#0b57d0", "#fde8ea"),
    "damaged mark": ("#b00020", "#fde8ea"),
}
# Borders and rules: decorative, not read (WCAG exempts them).
BORDER = "#c4c4c4"

STYLE = f"""
body {{ font-family: sans-serif; color: {TEXT_COLORS["text"][0]}; background: #ffffff;
  margin: 0 auto; max-width: 1280px; padding: 0 16px 48px; line-height: 1.45; }}
a {{ color: {TEXT_COLORS["link"][0]}; }}
header {{ border-bottom: 1px solid {BORDER}; padding: 8px 0; }}
h1 {{ font-size: 1.6em; margin: 16px 0 8px; }}
h2 {{ font-size: 1.25em; margin: 28px 0 8px; border-bottom: 1px solid {BORDER}; }}
h3 {{ font-size: 1.05em; margin: 16px 0 6px; }}
table {{ border-collapse: collapse; margin: 8px 0; font-size: 0.92em; }}
th, td {{ border: 1px solid {BORDER}; padding: 3px 7px; text-align: left;
  vertical-align: top; }}
thead th {{ background: {TEXT_COLORS["header text"][1]}; position: sticky; top: 0; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
code {{ font-size: 0.95em; overflow-wrap: anywhere; }}
code.id, .time {{ white-space: nowrap; }}
.muted {{ color: {TEXT_COLORS["muted"][0]}; }}
.clean {{ color: {TEXT_COLORS["clean"][0]}; font-weight: bold; }}
.problem {{ color: {TEXT_COLORS["problem"][0]}; font-weight: bold; }}
tr.damaged td, tr.damaged th {{ background: {TEXT_COLORS["damaged row"][1]}; }}
tr.damaged a {{ color: {TEXT_COLORS["damaged link"][0]}; }}
tr.damaged .problem {{ color: {TEXT_COLORS["damaged mark"][0]}; }}
.chart {{ overflow-x: auto; margin: 8px 0; }}
.chart svg circle:hover, .chart svg path:hover {{ stroke: #000000; stroke-width: 2; }}
pre.diff {{ overflow-x: auto; border: 1px solid {BORDER}; padding: 6px 8px; margin: 4px 0;
  font-size: 0.9em; }}
details {{ margin: 6px 0; }}
tr:target td {{ outline: 2px solid {TEXT_COLORS["link"][0]}; }}
.filter {{ margin: 8px 0; }}
.filter input, .filter select {{ font-size: 1em; padding: 2px 4px; }}
[hidden] {{ display: none; }}
"""

# Filters the rows of each table named by an input's `data-filter-for`: by the text typed
# (anywhere in the row) and, when the table has an outcome select, by the row's outcome.
SCRIPT = """
document.querySelectorAll("input[data-filter-for]").forEach(function (input) {
  var id = input.getAttribute("data-filter-for");
  var table = document.getElementById(id);
  var select = document.querySelector("select[data-filter-for='" + id + "']");
  var count = document.getElementById(id + "-count");
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  function apply() {
    var text = input.value.trim().toLowerCase();
    var wanted = select ? select.value : "";
    var shown = 0;
    rows.forEach(function (row) {
      var match = (!text || row.textContent.toLowerCase().indexOf(text) !== -1) &&
        (!wanted || row.getAttribute("data-outcome") === wanted);
      row.hidden = !match;
      if (match) { shown += 1; }
    });
    if (count) { count.textContent = shown + " of " + rows.length + " shown"; }
  }
  input.addEventListener("input", apply);
  if (select) { select.addEventListener("change", apply); }
  apply();
});
"""

GENERATOR = "tune-ledger dashboard"


def _sha256(text: str) -> str:
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"
    )


CSP = (
    f"default-src 'none'; style-src {_sha256(STYLE)}; script-src {_sha256(SCRIPT)}; "
    "base-uri 'none'; form-action 'none'"
)


def document(title: str, body: str) -> str:
    """A whole page: the frame around `body` (already HTML), titled `title` (text)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f'<meta name="generator" content="{GENERATOR}">',
        f"<title>{escape(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        body.rstrip("\n"),
        f"<script>{SCRIPT}</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"
