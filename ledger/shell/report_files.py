"""Writing the tuning report next to the ledger and recording that it was written (R4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger.shell.api import OpLedger
    from stages.commands import RecordReport


def write_report(
    ledger: OpLedger, *, key: str | None = None, command_line: str | None = None
) -> dict[str, Any]:
    """Render custom/OP/OP_tuning_report.md and its SVG chart, then record a report event."""
    command = write_files(ledger)
    outcome = ledger.execute(command, key=key, command_line=command_line)
    return {
        "path": command.path,
        "digest": command.digest,
        "events": [{"id": e.id, "type": e.type} for e in outcome.events],
        "warnings": list(outcome.warnings),
    }


def write_files(ledger: OpLedger) -> RecordReport:
    """Write OP_tuning_report.md and its SVG chart; return the command that records them
    (the CLI appends it itself, so that a retried idempotency key is matched first)."""
    from ledger.log import codec
    from ledger.projections import report, splice
    from ledger.shell import rollback
    from stages import commands as cmd
    from stages.policy import effective_policy

    state = ledger.load().state
    # The report is appended as an event: refused before its files are written.
    rollback.refuse_unaccepted(ledger.store, ledger.memory_path, state, ledger.op)
    markdown, svg = report.render_report(state, None, effective_policy(state))
    path = ledger.dir / report.report_name(ledger.op)
    splice.write_if_changed(path, markdown, root=ledger.root)
    splice.write_if_changed(ledger.dir / report.chart_name(ledger.op), svg, root=ledger.root)
    relative = path.relative_to(ledger.root).as_posix()
    return cmd.RecordReport(path=relative, digest=codec.digest(markdown.encode("utf-8")))
