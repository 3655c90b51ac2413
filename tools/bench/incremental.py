"""Benchmark: `status` on a long ledger vs on a short one (its cost must not grow with n)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools.bench.ledgers import count_lines, ledger_file
from tools.bench.processes import process_time, status_argv
from tools.bench.timing import alternate, figure, rounded, summary


def bench_incremental(small: Path, big: Path, repeats: int) -> dict[str, Any]:
    """`status` on a long ledger vs on a 1k-event one (goal ≤ 2×: cost must not grow with n)."""
    small_argv, big_argv = status_argv(small), status_argv(big)
    first_big = process_time(big_argv)  # the first run may build a snapshot
    process_time(small_argv)
    big_s, small_s = alternate(
        lambda: process_time(big_argv), lambda: process_time(small_argv), repeats=repeats
    )
    value, reference = min(big_s), min(small_s)
    big_events, small_events = count_lines(ledger_file(big)), count_lines(ledger_file(small))
    return figure(
        what=f"tune-ledger --json status OP on a {big_events}-event ledger (best of N)",
        value=value,
        reference=reference,
        unit="s",
        ratio=value / reference,
        ratio_is="status_time(big) / status_time(small)",
        goal="≤ 2",
        met=value / reference <= 2,
        reference_is=f"the same on a {small_events}-event ledger",
        noise={"value": summary(big_s), "reference": summary(small_s)},
        first_run_s=rounded(first_big),
        events=big_events,
        reference_events=small_events,
        snapshot=_snapshot_note(big),
    )


def _snapshot_note(root: Path) -> str:
    entry = ledger_file(root).parent / ".tune-ledger-cache" / "views.json"
    if entry.is_file():
        return f"status served from the view cache {entry} (the first run wrote it)"
    return "no view cache (every status replayed the whole ledger)"
