"""The dashboard's HTML building blocks: escaping, tables, lists, filters, and the site's paths.

Every text that comes from a ledger goes through `t` (html.escape, quotes included), since a
cloned repository's ledgers are input from strangers; only the chart arrives as markup, escaped
by its renderer. The pages built from these are pure and deterministic (dashboard_index_html.py,
dashboard_page_html.py): the same views give the same bytes (no render time, ops in name order,
fixed number formats), so a site can be committed and diffed.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from urllib.parse import quote

from ledger.projections.formatting import fmt_time_us

NONE = "—"  # a value the ledger does not (yet) hold
INDEX_NAME = "index.html"
PAGES = "ops"  # the folder of the op pages, beside the index


def page_name(op: str) -> str:
    """The path of an op's page, relative to the index."""
    return f"{PAGES}/{quote(op)}.html"


def t(text: object) -> str:
    """Any value as HTML text, escaped."""
    return escape(str(text), quote=True)


def link(href: str, text: str) -> str:
    return f'<a href="{t(href)}">{t(text)}</a>'


def table(table_id: str | None, headers: Sequence[str], rows: Sequence[str]) -> str:
    """A table; `rows` are whole `<tr>` elements, headers are text (column headers)."""
    ident = f' id="{t(table_id)}"' if table_id else ""
    head = "".join(f'<th scope="col">{t(h)}</th>' for h in headers)
    body = "\n".join(rows)
    return f"<table{ident}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def field_table(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column table of named values: each name a row header, each value HTML."""
    body = "\n".join(
        f'<tr><th scope="row">{t(name)}</th><td>{value}</td></tr>' for name, value in rows
    )
    return f"<table>\n<tbody>\n{body}\n</tbody>\n</table>"


def time_html(value: float | None) -> str:
    return f'<span class="time">{t(fmt_time_us(value))}</span>' if value is not None else NONE


def bullets(items: Sequence[str], empty: str) -> str:
    if not items:
        return f'<p class="muted">{t(empty)}</p>'
    return "<ul>\n" + "\n".join(f"<li>{t(item)}</li>" for item in items) + "\n</ul>"


def filter_controls(table_id: str, label: str, outcomes: Sequence[str] | None) -> str:
    """The filter controls of a table (the inline script wires them up)."""
    parts = [
        '<div class="filter">',
        f'<label for="{table_id}-filter">{t(label)}</label> '
        f'<input id="{table_id}-filter" type="search" data-filter-for="{table_id}">',
    ]
    if outcomes is not None:
        options = "".join(f'<option value="{t(o)}">{t(o)}</option>' for o in outcomes)
        parts.append(
            f' <label for="{table_id}-outcome">outcome</label> <select id="{table_id}-outcome" '
            f'data-filter-for="{table_id}"><option value="">any</option>{options}</select>'
        )
    parts.append(f' <span id="{table_id}-count" class="muted" aria-live="polite"></span>')
    parts.append("</div>")
    return "".join(parts)
