"""`log`'s texts: one line per attempt; and `log OP --attempt ID` and `log OP --notes`: one
attempt, or the notes, with every text whole (issue 15 item 11). MEMORY.md and the report
shorten long texts to keep their tables readable; this is where a reader finds them in full."""

from __future__ import annotations

from typing import Any

from ledger.domain.state import State
from ledger.log.codec import canonical_json
from ledger.projections.formatting import LEVEL_MARKS, fmt_time_us, reported_mark


def attempt_detail(state: State, attempt_id: str) -> dict[str, Any]:
    """Every recorded field of one attempt (`attempt_id` resolved already), texts whole."""
    from ledger.projections.attempt_rows import attempt_row

    attempt = state.attempts[attempt_id]
    m = attempt.measurement
    return {
        **attempt_row(attempt),
        "param": attempt.param,
        "value": attempt.value,
        "prior": attempt.prior,
        "description": attempt.description,
        "impl_digest": attempt.impl_digest,
        "compared_us": attempt.compared_us,
        "times_us": list(m.times_us) if m else None,
        "metrics": dict(m.metrics) if m else None,
        "all_close": m.all_close if m else None,
        "layout_exit": m.layout_exit if m else None,
        "device_fields": m.device if m else None,
    }


def attempt_detail_text(data: dict[str, Any]) -> str:
    """One attempt for humans: a line per field, nothing shortened."""
    lines = [
        f"attempt {data['attempt']} (#{data['seq']}, {data['kind']}, stage {data['stage']}, "
        f"point {data['point'] or '-'})",
        f"  change: {data['change']}",
        f"  config: {canonical_json(data['config'])}",
        f"  status: {data['status']}   verdict: {data['verdict'] or '-'}"
        f"   failure: {data['failure'] or '-'}",
    ]
    if data["detail"]:
        label = "reason" if data["status"] == "abandoned" else "detail"
        lines.append(f"  {label}: {data['detail']}")
    if data["times_us"] is not None:
        times = ", ".join(fmt_time_us(t) for t in data["times_us"])
        lines.append(
            f"  time: {fmt_time_us(data['time_us'])} (samples {times}; best then "
            f"{fmt_time_us(data['compared_us'])}; provenance {data['provenance']})"
        )
        lines.append(
            f"  util: {data['util_pct'] if data['util_pct'] is not None else '-'}%   bubble: "
            f"{data['bubble_pct'] if data['bubble_pct'] is not None else '-'}%   all_close: "
            f"{data['all_close']}   layout exit: {data['layout_exit']}"
        )
        lines.append(f"  device: {data['device']}")
    for key in ("prior", "description", "impl_digest", "retry_override"):
        if data[key]:
            lines.append(f"  {key.replace('_', ' ')}: {data[key]}")
    return "\n".join(lines)


def notes_text(notes: list[str]) -> str:
    """The notes recorded in the ledger, oldest first, each whole."""
    if not notes:
        return "no notes"
    return "\n".join(f"- {note}" for note in notes)


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
    ) + "".join(
        f"\n{legend}"
        for level, (_mark, legend) in LEVEL_MARKS.items()
        if any(r["provenance"] == level for r in rows)
    )
