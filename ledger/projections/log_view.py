"""`log`'s rows as text for people: one line per attempt.

Apart from ledger/projections/views.py, which builds the rows from a replayed state, because
`log --limit N` prints rows kept in the view cache (ledger/projections/view_cache.py) and then
needs neither the state's classes nor the event schema: a process that only prints them costs
about what `status` does.
"""

from __future__ import annotations

from typing import Any

from ledger.projections.formatting import REPORTED_LEGEND, fmt_time_us, reported_mark


def log_text(rows: list[dict[str, Any]]) -> str:
    """`log` for humans: one line per attempt; each measured one names its device once any
    device is known (a verdict never compares two, R8)."""
    if not rows:
        return "no attempts"
    shown = any(r.get("device") not in (None, "unknown") for r in rows)
    return "\n".join(
        f"{r['seq']:>4} {r['attempt']} {r['stage']:<9} {r['kind']:<9} "
        f"{(r['verdict'] or r['status']):<14} {(r['failure'] or ''):<8} "
        f"{fmt_time_us(r['time_us']) + reported_mark(r['provenance']):>13}  {r['change']}"
        + (f"  [on {r['device']}]" if shown and r.get("device") else "")
        # A failure's detail or an abandon's reason, whole: the reader looks for it here.
        + (
            f"\n{'':>18}{'reason' if r['status'] == 'abandoned' else 'detail'}: {r['detail']}"
            if r["detail"]
            else ""
        )
        for r in rows
    ) + (f"\n{REPORTED_LEGEND}" if any(r["provenance"] == "reported" for r in rows) else "")
