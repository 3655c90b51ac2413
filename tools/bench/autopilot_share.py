"""Figure: the ledger's share of an autopilot campaign's wall time, read from the campaign's log."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from tools.bench.timing import figure


def autopilot_share(log: Path | None) -> dict[str, Any]:
    """The ledger's share of an autopilot campaign's wall time (goal ≤ 5%), from the closing
    JSON line `python -m tools.autopilot` prints (`timing: {wall_s, ledger_s, pypto_s,
    pypto_runs, ledger_share}`), passed as `--autopilot-log FILE`: the campaign takes minutes
    of real PyPTO runs, so the bench reads its record instead of running it."""
    if log is None or not log.exists():
        return {
            "what": "ledger time / wall time of an autopilot campaign",
            "value": None,
            "unit": "fraction",
            "status": "todo",
            "how": "python -m tools.autopilot --op OP > /tmp/autopilot.log; then "
            "python -m tools.bench.run --autopilot-log /tmp/autopilot.log",
        }
    timing = None
    for line in log.read_text().splitlines():
        with contextlib.suppress(ValueError):
            doc = json.loads(line)
            if isinstance(doc, dict) and isinstance(doc.get("timing"), dict):
                timing = doc["timing"]
    if timing is None:
        return {"value": None, "status": f"no timing summary found in {log}"}
    share = timing.get("ledger_share")
    return figure(
        what="ledger time / wall time of an autopilot campaign",
        value=timing.get("ledger_s"),
        reference=timing.get("wall_s"),
        unit="s",
        ratio=share,
        ratio_is="ledger_s / wall_s",
        goal="≤ 0.05",
        met=None if share is None else share <= 0.05,
        reference_is="the campaign's wall time",
        timing=timing,
        source=str(log),
    )
