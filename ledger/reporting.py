"""Writing the tuning report next to the ledger and recording that it was written (R4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledger import codec, report, splice
from stages import commands as cmd

if TYPE_CHECKING:
    from ledger.api import OpLedger


def write_report(ledger: OpLedger, *, key: str | None = None,
                 command_line: str | None = None) -> dict[str, Any]:
    """Render custom/OP/OP_tuning_report.md and its SVG chart, then record a report event."""
    from stages.policy import effective_policy

    state = ledger.load().state
    markdown, svg = report.render_report(state, None, effective_policy(state))
    report_path = ledger.dir / report.report_name(ledger.op)
    chart_path = ledger.dir / report.chart_name(ledger.op)
    splice.write_if_changed(report_path, markdown)
    splice.write_if_changed(chart_path, svg)
    relative = report_path.relative_to(ledger.root).as_posix()
    digest = codec.digest(markdown.encode("utf-8"))
    outcome = ledger.execute(cmd.RecordReport(path=relative, digest=digest), key=key,
                             command_line=command_line)
    return {
        "path": relative,
        "chart": chart_path.relative_to(ledger.root).as_posix(),
        "digest": digest,
        "events": [{"id": e.id, "type": e.type} for e in outcome.events],
        "warnings": list(outcome.warnings),
    }
