"""Where a PyPTO run is (compile, simulate, verify), for a person watching a long campaign.

A run reports its phase by overwriting one small file named by $TUNE_LEDGER_PROGRESS_FILE
(nothing happens without it); the autopilot's live line reads it. Nothing compared or
committed ever reads this file.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

ENV = "TUNE_LEDGER_PROGRESS_FILE"


def report(phase: str) -> None:
    """Say which phase the run is in (best effort: a progress line must never fail a run)."""
    target = os.environ.get(ENV)
    if not target:
        return
    with contextlib.suppress(OSError):
        temporary = Path(f"{target}.{os.getpid()}")
        temporary.write_text(phase, encoding="utf-8")
        temporary.replace(target)


def read(path: Path) -> str | None:
    """The phase last reported to `path`, if any."""
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None
