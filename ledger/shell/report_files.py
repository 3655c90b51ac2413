"""Writing the tuning report next to the ledger and recording that it was written (R4)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger.shell.api import OpLedger


def write_report(
    ledger: OpLedger, *, key: str | None = None, command_line: str | None = None
) -> dict[str, Any]:
    """Render custom/OP/OP_tuning_report.md and its SVG chart, then record a report event."""
    command = ledger.write_report_files()
    outcome = ledger.execute(command, key=key, command_line=command_line)
    return {
        "path": command.path,
        "digest": command.digest,
        "events": [{"id": e.id, "type": e.type} for e in outcome.events],
        "warnings": list(outcome.warnings),
    }
