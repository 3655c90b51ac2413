"""The dashboard's pages as HTML: the index of every op and one page per op.

Pure and deterministic: the same views give the same bytes (no render time, ops in name
order, fixed number formats), so a site can be committed and diffed. Every text that comes
from a ledger goes through `t` (html.escape, quotes included), since a cloned repository's
ledgers are input from strangers; only the chart arrives as markup, escaped by its renderer.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from html import escape
from urllib.parse import quote

from ledger.projections import dashboard_assets as assets
from ledger.projections.dashboard_model import (
    OUTCOME_ORDER,
    AttemptRow,
    EvidenceRef,
    KernelVersion,
    OpPage,
    OpView,
    PersonRow,
    RelaxationRow,
    StageSpan,
    Summary,
    TargetView,
)
from ledger.projections.formatting import change_pct, fmt_pct, fmt_speedup, fmt_time_us

NONE = "—"  # a value the ledger does not (yet) hold
INDEX_NAME = "index.html"
PAGES = "ops"  # the folder of the op pages, beside the index


def page_name(op: str) -> str:
    """The path of an op's page, relative to the index."""
    return f"{PAGES}/{quote(op)}.html"


def t(text: object) -> str:
    """Any value as HTML text, escaped."""
    return escape(str(text), quote=True)


def _link(href: str, text: str) -> str:
    return f'<a href="{t(href)}">{t(text)}</a>'


def _table(
    table_id: str | None, headers: Sequence[str], rows: Sequence[str], caption: str = ""
) -> str:
    """A table; `rows` are whole `<tr>` elements, headers are text (column headers)."""
    ident = f' id="{t(table_id)}"' if table_id else ""
    head = "".join(f'<th scope="col">{t(h)}</th>' for h in headers)
    cap = f"<caption>{t(caption)}</caption>" if caption else ""
    body = "\n".join(rows)
    return (
        f"<table{ident}>{cap}\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"
    )


def _fields(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column table of named values: each name a row header, each value HTML."""
    body = "\n".join(
        f'<tr><th scope="row">{t(name)}</th><td>{value}</td></tr>' for name, value in rows
    )
    return f"<table>\n<tbody>\n{body}\n</tbody>\n</table>"


def _time(value: float | None) -> str:
    return f'<span class="time">{t(fmt_time_us(value))}</span>' if value is not None else NONE


def _list(items: Sequence[str], empty: str) -> str:
    if not items:
        return f'<p class="muted">{t(empty)}</p>'
    return "<ul>\n" + "\n".join(f"<li>{t(item)}</li>" for item in items) + "\n</ul>"


# --- index ----------------------------------------------------------------------------------


def render_index(views: Sequence[OpView]) -> str:
    """The index page: one row per op (audit's verdict, stage, status, baseline → best,
    speed-up, target, attempts by outcome, provenance, conflicts, person decisions, device)."""
    damaged = sum(1 for v in views if v.health == "damaged")
    with_findings = sum(1 for v in views if v.health == "findings")
    headers = (
        "op",
        "audit",
        "stage",
        "status",
        "baseline → best",
        "speed-up",
        "target",
        "attempts by outcome",
        "provenance",
        "merge conflicts",
        "person decisions",
        "device",
    )
    rows = [_index_row(view) for view in views]
    body = [
        "<main>",
        "<h1>Tuning campaigns</h1>",
        f"<p>{len(views)} op(s) under <code>custom/</code>: {damaged} damaged, "
        f"{with_findings} with audit findings. Every number is from the replay "
        "<code>tune-ledger audit</code> checks; regenerate with "
        "<code>tune-ledger dashboard</code>.</p>",
        _filter("ops", "Filter ops", None),
        _table("ops", headers, rows),
        "</main>",
    ]
    return assets.document("tune-ledger dashboard", "\n".join(body), script=True)


def _index_row(view: OpView) -> str:
    name = _link(page_name(view.op), view.op) if view.has_page else t(view.op)
    op_cell = f'<th scope="row">{name}</th>'
    audit = _audit_cell(view)
    s = view.summary
    if s is None:
        blanks = "".join(f"<td>{NONE}</td>" for _ in range(10))
        return f'<tr class="damaged" data-outcome="damaged">{op_cell}<td>{audit}</td>{blanks}</tr>'
    cells = [
        t(s.stage or NONE),
        t(s.status)
        + (f'<br><span class="muted">{t(s.status_detail)}</span>' if s.status_detail else ""),
        f"{_time(s.baseline_us)} → {_time(s.best_us)}",
        t(fmt_speedup(s.speedup)) if s.speedup is not None else NONE,
        _target_cell(s),
        _outcomes(s),
        _levels(s.provenance),
        t(len(s.conflicts)) if s.conflicts else "0",
        _person_count(s.person_decisions),
        t(s.device) if s.device is not None else NONE,
    ]
    tds = "".join(f"<td>{c}</td>" for c in cells)
    return f'<tr data-outcome="{t(view.health)}">{op_cell}<td>{audit}</td>{tds}</tr>'


def _audit_cell(view: OpView) -> str:
    if view.health == "clean":
        return '<span class="clean">clean</span>'
    first = t(view.problems[0]) if view.problems else ""
    where = f"exit {view.code}" + (f", rule {view.rule}" if view.rule else "")
    if view.health == "damaged":
        return f'<span class="problem">damaged</span> ({t(where)}): {first}'
    more = f" (and {len(view.problems) - 1} more)" if len(view.problems) > 1 else ""
    count = f"{len(view.problems)} finding(s)"
    return f'<span class="problem">{count}</span> ({t(where)}): {first}{t(more)}'


def _target_cell(s: Summary) -> str:
    if s.target_us is None:
        return NONE
    met = "" if s.target_met is None else (" met" if s.target_met else " not met")
    return f"{_time(s.target_us)}{t(met)}"


def _outcomes(s: Summary) -> str:
    if not s.outcomes:
        return "0"
    return t(f"{s.attempts}: ") + _pairs(s.outcomes)


def _pairs(pairs: Sequence[tuple[str, int]]) -> str:
    shown = [f"{name} {count}" for name, count in pairs if count]
    return t(", ".join(shown)) if shown else NONE


def _levels(pairs: Sequence[tuple[str, int]]) -> str:
    """The provenance mix: every level audit counts, zeros included (a zero is news too)."""
    return t(", ".join(f"{name} {count}" for name, count in pairs)) if pairs else NONE


def _person_count(rows: Sequence[PersonRow]) -> str:
    """How many decisions a person took, and who (each name once, in ledger order)."""
    if not rows:
        return "0"
    names = ", ".join(dict.fromkeys(row.person for row in rows))
    return t(f"{len(rows)}: {names}")


def _filter(table_id: str, label: str, outcomes: Sequence[str] | None) -> str:
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


# --- an op's page ---------------------------------------------------------------------------


def render_op_page(page: OpPage, to_root: str) -> str:
    """An op's page: summary, chart, adopted chain, failed ideas, points, target sheet, kernel
    versions, timeline, decisions, notes, the filterable attempts table, and its files."""
    view = page.view
    up = "../" + to_root.rstrip("/") + "/" if to_root else "../"
    files = _fields(
        [
            ("MEMORY.md", _link(up + quote(view.memory_path), view.memory_path)),
            ("ledger", _link(up + quote(view.ledger_path), view.ledger_path)),
        ]
    )
    body = [
        f'<header><a href="../{INDEX_NAME}">All ops</a></header>',
        "<main>",
        f"<h1>{t(view.op)}</h1>",
        "<h2>Audit</h2>",
        _audit_section(view),
    ]
    if view.summary is not None:
        body += _data_sections(page, view.summary, up)
    body += ["<h2>Files</h2>", files, "</main>"]
    return assets.document(f"{view.op}: tune-ledger dashboard", "\n".join(body), script=True)


def _audit_section(view: OpView) -> str:
    if view.health == "clean":
        return (
            '<p><span class="clean">clean</span>: every step legal, every verdict re-derived.</p>'
        )
    where = f"exit {view.code}" + (f", rule {view.rule}" if view.rule else "")
    head = "damaged: the ledger could not be read" if view.health == "damaged" else "findings"
    return f'<p><span class="problem">{t(head)}</span> ({t(where)})</p>\n' + _list(
        view.problems, ""
    )


def _data_sections(page: OpPage, s: Summary, up: str) -> list[str]:
    summary = _fields(
        [
            ("status", t(s.status) + (f": {t(s.status_detail)}" if s.status_detail else "")),
            ("stage", t(s.stage or NONE)),
            ("baseline → best", f"{_time(s.baseline_us)} → {_time(s.best_us)}"),
            ("speed-up", t(fmt_speedup(s.speedup)) if s.speedup is not None else NONE),
            ("target", _target_cell(s)),
            ("attempts", _outcomes(s)),
            ("events", t(s.events)),
            ("provenance", _levels(s.provenance)),
            ("merge conflicts", t("; ".join(s.conflicts)) if s.conflicts else "none"),
            ("person decisions", _person_count(s.person_decisions)),
            ("best measured on", t(s.device) if s.device is not None else NONE),
        ]
    )
    chart = (
        f'<figure class="chart">{page.chart}<figcaption class="muted">Hover a mark for its '
        "attempt; the attempts table below has the same data as text.</figcaption></figure>"
        if page.chart
        else f'<p class="muted">{NONE}</p>'
    )
    return [
        "<h2>Summary</h2>",
        summary,
        "<h2>Time per attempt</h2>",
        chart,
        "<h2>Adopted chain</h2>",
        _attempt_table(None, page.adopted, "None: the best is still the baseline."),
        "<h2>Failed ideas (do not retry)</h2>",
        _attempt_table(None, page.failed, "None."),
        "<h2>Optimization points</h2>",
        _points(page),
        "<h2>Target sheet</h2>",
        _target_sheet(page.target),
        "<h2>Kernel versions</h2>",
        _kernels(page.kernels, page.view.op, up),
        "<h2>Timeline</h2>",
        _timeline(page.timeline, s),
        "<h2>Person decisions</h2>",
        _person_decisions(s),
        "<h2>Decisions</h2>",
        _list(page.decisions, "None recorded."),
        "<h2>Notes</h2>",
        _list(page.notes, "None."),
        "<h2>Attempts</h2>",
        _filter("attempts", "Filter attempts", OUTCOME_ORDER),
        _attempt_table("attempts", page.attempts, "No attempts yet."),
    ]


def anchor(attempt: str) -> str:
    """The id of an attempt's row in the attempts table (evidence links to it)."""
    return f"attempt-{attempt}"


def _attempt_table(table_id: str | None, rows: Sequence[AttemptRow], empty: str) -> str:
    if not rows and table_id is None:
        return f'<p class="muted">{t(empty)}</p>'
    headers = ("#", "attempt", "stage", "point", "change", "time", "vs best then", "outcome")
    anchored = table_id == "attempts"  # only the full table's rows carry ids (unique)
    return _table(
        table_id,
        (*headers, "provenance", "device", "detail"),
        [_attempt_tr(r, anchored) for r in rows],
    )


def _attempt_tr(row: AttemptRow, anchored: bool = False) -> str:
    vs = (
        t(fmt_pct(change_pct(row.time_us, row.best_us), signed=True))
        if row.time_us is not None and row.best_us
        else NONE
    )
    cells = [
        f'<td class="num">{row.seq}</td>',
        f'<td><code class="id">{t(row.id)}</code></td>',
        f"<td>{t(row.stage)}</td>",
        f"<td>{t(row.point) if row.point else NONE}</td>",
        f"<td><code>{t(row.change)}</code></td>",
        f'<td class="num">{_time(row.time_us)}</td>',
        f'<td class="num">{vs}</td>',
        f"<td>{t(row.outcome)}</td>",
        f"<td>{t(row.provenance) if row.provenance else NONE}</td>",
        f"<td>{t(row.device) if row.device else NONE}</td>",
        f"<td>{t(row.detail) if row.detail else ''}</td>",
    ]
    ident = f' id="{t(anchor(row.id))}"' if anchored else ""
    return f'<tr{ident} data-outcome="{t(row.outcome)}">{"".join(cells)}</tr>'


def _kernels(versions: Sequence[KernelVersion] | None, op: str, up: str) -> str:
    """The adopted chain's kernels, each with the unified diff from the one before in a
    `<details>` (closed: a diff can be long); a kept kernel links to its file (`up` leads from
    the page to the root)."""
    if versions is None:
        return f'<p class="muted">{NONE} (no kernel bound yet: the op is not activated)</p>'
    headers = ("#", "kernel", "from", "kept")
    rows = []
    for number, v in enumerate(versions, 1):
        source = (
            "activated (the baseline's)" if v.attempt is None else f"attempt {v.seq} ({v.attempt})"
        )
        path = f"custom/{op}/kernels/{v.digest}.py"
        kept = (
            _link(up + quote(path), path)
            if v.kept
            else "not kept: restore it from git (audit names a kept file that does not match)"
        )
        rows.append(
            f'<tr><td class="num">{number}</td><td><code>{t(v.digest[:12])}</code></td>'
            f"<td>{t(source)}</td><td>{kept}</td></tr>"
        )
    parts = [_table(None, headers, rows)]
    for before, v in itertools.pairwise(versions):
        title = f"{before.digest[:12]} → {v.digest[:12]}"
        if v.diff is None:
            parts.append(f'<p class="muted">Diff {t(title)}: {NONE} (a side is not kept)</p>')
            continue
        cut = f"\n… {v.diff_cut} more line(s): see `tune-ledger kernel diff`" if v.diff_cut else ""
        parts.append(
            f"<details><summary>Diff {t(title)}</summary>"
            f'<pre class="diff">{t(v.diff + cut)}</pre></details>'
        )
    return "\n".join(parts)


def _person_decisions(s: Summary) -> str:
    """Each guard a person lowered, as MEMORY.md and the report word it, and those lowered now."""
    items = [f"{row.text} (event {row.event[:12]})" for row in s.person_decisions]
    text = _list(items, "None: every step followed the protocol's guards.")
    if s.lowered:
        text += f"\n<p>Guards lowered now: {t('; '.join(s.lowered))}.</p>"
    return text


def _points(page: OpPage) -> str:
    if not page.points:
        return '<p class="muted">None opened yet.</p>'
    headers = ("point", "stage", "state", "reason", "candidates", "mutations", "no-gain streak")
    rows = [
        f"<tr><td><code>{t(p.name)}</code></td><td>{t(p.stage)}</td><td>{t(p.state)}</td>"
        f'<td>{t(p.reason)}</td><td class="num">{p.candidates}</td>'
        f'<td class="num">{p.mutations}</td><td class="num">{p.streak}</td></tr>'
        for p in page.points
    ]
    return _table(None, headers, rows)


def _target_sheet(sheet: TargetView | None) -> str:
    if sheet is None:
        return '<p class="muted">Not written yet.</p>'
    source = t(sheet.target_source) + (f" ({t(sheet.source_ref)})" if sheet.source_ref else "")
    fields = _fields(
        [
            ("baseline", f"{_time(sheet.baseline_us)} (provenance {t(sheet.provenance)})"),
            ("target", f"{_time(sheet.target_us)} from {source}"),
            ("required speed-up", t(fmt_speedup(sheet.required_speedup)) + " (baseline / target)"),
            ("P0 shape", f"<code>{t(sheet.shape)}</code>"),
            ("metric", t(sheet.metric)),
            ("measured with", t(sheet.tool) if sheet.tool else NONE),
            ("baseline device", t(sheet.device)),
            ("vec tile limit", t(sheet.vec_limit)),
            ("cube tile limit", t(sheet.cube_limit)),
        ]
    )
    if not sheet.relaxations:
        return fields + '\n<h3>Relaxations</h3>\n<p class="muted">None.</p>'
    headers = ("#", "tile", "new limit", "basis", "evidence", "event")
    rows = [_relaxation_tr(i, r) for i, r in enumerate(sheet.relaxations, 1)]
    return fields + "\n<h3>Relaxations</h3>\n" + _table(None, headers, rows)


def _relaxation_tr(number: int, r: RelaxationRow) -> str:
    if r.evidence:
        evidence = ", ".join(_evidence_link(e) for e in r.evidence)
    else:
        evidence = t(f"none: signed by {r.person}") if r.person else NONE
    return (
        f'<tr><td class="num">{number}</td><td>{t(r.what)}</td><td><code>{t(r.limit)}</code></td>'
        f"<td>{t(r.basis)}</td><td>{evidence}</td><td><code>{t(r.event[:12])}</code></td></tr>"
    )


def _evidence_link(ref: EvidenceRef) -> str:
    """An evidence attempt linked to its row, or its id alone when it is no attempt here."""
    if ref.seq is None:
        return f"<code>{t(ref.attempt)}</code> (no attempt of this op)"
    time = f", {t(fmt_time_us(ref.time_us))}" if ref.time_us is not None else ""
    return (
        f'<a href="#{t(anchor(ref.attempt))}">attempt {ref.seq}</a> '
        f"(<code>{t(ref.attempt)}</code>{time})"
    )


def _timeline(spans: Sequence[StageSpan], s: Summary) -> str:
    if not spans:
        return '<p class="muted">No stage entered yet.</p>'
    headers = ("stage", "attempts", "numbers", "best at start", "best at end", "change", "exit")
    rows = []
    for span in spans:
        numbers = f"{span.first}–{span.last}" if span.first is not None else NONE
        change = (
            t(fmt_pct(change_pct(span.best_end_us, span.best_start_us), signed=True))
            if span.best_end_us and span.best_start_us
            else NONE
        )
        rows.append(
            f'<tr><td>{t(span.stage)}</td><td class="num">{span.attempts}</td>'
            f'<td class="num">{t(numbers)}</td><td class="num">{_time(span.best_start_us)}</td>'
            f'<td class="num">{_time(span.best_end_us)}</td><td class="num">{change}</td>'
            f"<td>{t(span.exit)}</td></tr>"
        )
    end = (
        f"<p>Now: {t(s.status)}" + (f": {t(s.status_detail)}" if s.status_detail else "") + ".</p>"
    )
    return _table(None, headers, rows) + "\n" + end
