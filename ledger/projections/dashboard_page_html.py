"""An op's dashboard page as HTML: summary, chart, attempts, points, target sheet, kernel
versions, timeline, decisions and notes."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from urllib.parse import quote

from ledger.domain import devices
from ledger.log.codec import canonical_json
from ledger.projections import dashboard_assets as assets
from ledger.projections.attempt_markdown import OUTCOME_ORDER
from ledger.projections.dashboard_index_html import (
    audit_where,
    levels_cell,
    outcomes_cell,
    person_count,
    target_cell,
)
from ledger.projections.dashboard_markup import (
    INDEX_NAME,
    NONE,
    bullets,
    field_table,
    filter_controls,
    link,
    t,
    table,
    time_html,
)
from ledger.projections.dashboard_page import (
    EvidenceRef,
    KernelVersion,
    OpPage,
    RelaxationRow,
    TargetView,
)
from ledger.projections.dashboard_rows import OpView, Summary
from ledger.projections.formatting import change_pct, fmt_pct, fmt_speedup, fmt_time_us
from ledger.projections.timeline import StageSpan, Step, config_diff, outcome, point_state


def render_op_page(page: OpPage, to_root: str) -> str:
    """An op's page: summary, chart, adopted chain, failed ideas, points, target sheet, kernel
    versions, timeline, decisions, notes, the filterable attempts table, and its files."""
    view = page.view
    up = "../" + to_root.rstrip("/") + "/" if to_root else "../"
    files = field_table(
        [
            ("MEMORY.md", link(up + quote(view.memory_path), view.memory_path)),
            ("ledger", link(up + quote(view.ledger_path), view.ledger_path)),
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
    return assets.document(f"{view.op}: tune-ledger dashboard", "\n".join(body))


def _audit_section(view: OpView) -> str:
    if view.health == "clean":
        return (
            '<p><span class="clean">clean</span>: every step legal, every verdict re-derived.</p>'
        )
    where = audit_where(view)
    head = "damaged: the ledger could not be read" if view.health == "damaged" else "findings"
    return f'<p><span class="problem">{t(head)}</span> ({t(where)})</p>\n' + bullets(
        view.problems, ""
    )


def _data_sections(page: OpPage, s: Summary, up: str) -> list[str]:
    summary = field_table(
        [
            ("status", t(s.status) + (f": {t(s.status_detail)}" if s.status_detail else "")),
            ("stage", t(s.stage or NONE)),
            ("baseline → best", f"{time_html(s.baseline_us)} → {time_html(s.best_us)}"),
            ("speed-up", t(fmt_speedup(s.speedup)) if s.speedup is not None else NONE),
            ("target", target_cell(s)),
            ("attempts", outcomes_cell(s)),
            ("events", t(s.events)),
            ("provenance", levels_cell(s.provenance)),
            ("merge conflicts", t("; ".join(s.conflicts)) if s.conflicts else "none"),
            ("person decisions", person_count(s.person_decisions)),
            ("best measured on", t(s.device) if s.device is not None else NONE),
        ]
    )
    chart = (
        f'<figure class="chart">{page.chart}<figcaption class="muted">Hover a mark for its '
        "attempt; the attempts table below has the same data as text.</figcaption></figure>"
        if page.chart
        else f'<p class="muted">{NONE}</p>'
    )
    attempts = filter_controls("attempts", "Filter attempts", OUTCOME_ORDER)
    sections = [
        ("Summary", summary),
        ("Time per attempt", chart),
        (
            "Adopted chain",
            _attempt_table(None, page.adopted, "None: the best is still the baseline."),
        ),
        ("Failed ideas (do not retry)", _attempt_table(None, page.failed, "None.")),
        ("Optimization points", _points(page)),
        ("Target sheet", _target_sheet(page.target)),
        ("Kernel versions", _kernels(page.kernels, page.view.op, up)),
        ("Timeline", _timeline(page.timeline, s)),
        ("Person decisions", _person_decisions(s)),
        ("Decisions", bullets(page.decisions, "None recorded.")),
        ("Notes", bullets(page.notes, "None.")),
        (
            "Attempts",
            attempts + "\n" + _attempt_table("attempts", page.attempts, "No attempts yet."),
        ),
    ]
    return [f"<h2>{title}</h2>\n{body}" for title, body in sections]


def anchor(attempt: str) -> str:
    """The id of an attempt's row in the attempts table (evidence links to it)."""
    return f"attempt-{attempt}"


def _attempt_table(table_id: str | None, rows: Sequence[Step], empty: str) -> str:
    if not rows and table_id is None:
        return f'<p class="muted">{t(empty)}</p>'
    headers = ("#", "attempt", "stage", "point", "change", "time", "vs best then", "outcome")
    anchored = table_id == "attempts"  # only the full table's rows carry ids (unique)
    return table(
        table_id,
        (*headers, "provenance", "device", "detail"),
        [_attempt_tr(r, anchored) for r in rows],
    )


def _change(step: Step) -> str:
    attempt = step.attempt
    if attempt.kind == "mutation":
        return f"{attempt.param}={canonical_json(attempt.value)}"
    if attempt.kind == "algorithm":
        return f"algorithm: {attempt.description or ''}"
    diff = config_diff(step.best_config, attempt.config)
    return f"candidate ({attempt.prior or 'unknown prior'}): {diff}"


def _attempt_tr(step: Step, anchored: bool = False) -> str:
    attempt, m = step.attempt, step.attempt.measurement
    vs = (
        t(fmt_pct(change_pct(m.median_us, step.best_us), signed=True))
        if m is not None and step.best_us
        else NONE
    )
    result = outcome(attempt)
    cells = [
        f'<td class="num">{attempt.seq}</td>',
        f'<td><code class="id">{t(attempt.id)}</code></td>',
        f"<td>{t(attempt.stage)}</td>",
        f"<td>{t(attempt.point) if attempt.point else NONE}</td>",
        f"<td><code>{t(_change(step))}</code></td>",
        f'<td class="num">{time_html(m.median_us if m else None)}</td>',
        f'<td class="num">{vs}</td>',
        f"<td>{t(result)}</td>",
        f"<td>{t(m.origin_level) if m else NONE}</td>",
        f"<td>{t(devices.label(m.device)) if m else NONE}</td>",
        f"<td>{t(attempt.detail) if attempt.detail else ''}</td>",
    ]
    ident = f' id="{t(anchor(attempt.id))}"' if anchored else ""
    return f'<tr{ident} data-outcome="{t(result)}">{"".join(cells)}</tr>'


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
            link(up + quote(path), path)
            if v.kept
            else "not kept: restore it from git (audit names a kept file that does not match)"
        )
        rows.append(
            f'<tr><td class="num">{number}</td><td><code>{t(v.digest[:12])}</code></td>'
            f"<td>{t(source)}</td><td>{kept}</td></tr>"
        )
    parts = [table(None, headers, rows)]
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
    text = bullets(items, "None: every step followed the protocol's guards.")
    if s.lowered:
        text += f"\n<p>Guards lowered now: {t('; '.join(s.lowered))}.</p>"
    return text


def _points(page: OpPage) -> str:
    if not page.points:
        return '<p class="muted">None opened yet.</p>'
    headers = ("point", "stage", "state", "reason", "candidates", "mutations", "no-gain streak")
    rows = [
        f"<tr><td><code>{t(p.name)}</code></td><td>{t(p.stage)}</td><td>{t(point_state(p))}</td>"
        f'<td>{t(p.reason)}</td><td class="num">{p.candidates}</td>'
        f'<td class="num">{p.mutations}</td><td class="num">{p.streak}</td></tr>'
        for p in page.points
    ]
    return table(None, headers, rows)


def _target_sheet(view: TargetView | None) -> str:
    if view is None:
        return '<p class="muted">Not written yet.</p>'
    sheet = view.sheet
    source = t(sheet.target_source) + (f" ({t(sheet.source_ref)})" if sheet.source_ref else "")
    fields = field_table(
        [
            ("baseline", f"{time_html(sheet.baseline_us)} (provenance {t(sheet.origin_level)})"),
            ("target", f"{time_html(sheet.target_us)} from {source}"),
            ("required speed-up", t(fmt_speedup(sheet.required_speedup)) + " (baseline / target)"),
            ("P0 shape", f"<code>{t(sheet.shape)}</code>"),
            ("metric", t(sheet.metric)),
            ("measured with", t(sheet.tool) if sheet.tool else NONE),
            ("baseline device", t(devices.label(sheet.device))),
            ("vec tile limit", t(view.vec_limit)),
            ("cube tile limit", t(view.cube_limit)),
        ]
    )
    if not view.relaxations:
        return fields + '\n<h3>Relaxations</h3>\n<p class="muted">None.</p>'
    headers = ("#", "tile", "new limit", "basis", "evidence", "event")
    rows = [_relaxation_tr(i, r) for i, r in enumerate(view.relaxations, 1)]
    return fields + "\n<h3>Relaxations</h3>\n" + table(None, headers, rows)


def _relaxation_tr(number: int, row: RelaxationRow) -> str:
    if row.evidence:
        evidence = ", ".join(_evidence_link(e) for e in row.evidence)
    else:
        evidence = t(f"none: signed by {row.person}") if row.person else NONE
    r = row.relaxation
    return (
        f'<tr><td class="num">{number}</td><td>{t(r.what)}</td>'
        f"<td><code>{t(canonical_json(r.limit))}</code></td>"
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
        seqs = [step.attempt.seq for step in span.steps]
        numbers = f"{seqs[0]}–{seqs[-1]}" if seqs else NONE
        change = (
            t(fmt_pct(change_pct(span.best_end_us, span.best_start_us), signed=True))
            if span.best_end_us and span.best_start_us
            else NONE
        )
        rows.append(
            f'<tr><td>{t(span.stage)}</td><td class="num">{len(seqs)}</td>'
            f'<td class="num">{t(numbers)}</td><td class="num">{time_html(span.best_start_us)}</td>'
            f'<td class="num">{time_html(span.best_end_us)}</td><td class="num">{change}</td>'
            f"<td>{t(span.exit)}</td></tr>"
        )
    end = (
        f"<p>Now: {t(s.status)}" + (f": {t(s.status_detail)}" if s.status_detail else "") + ".</p>"
    )
    return table(None, headers, rows) + "\n" + end
