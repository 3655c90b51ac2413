"""Benchmark: MEMORY.md render time and size as a campaign grows; bytes one attempt changes."""

from __future__ import annotations

import copy
import difflib
import math
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ledger.domain.replay import evolve
from ledger.domain.state import State
from ledger.log.store import FileStore
from ledger.projections import memory_file
from stages.policy import effective_policy
from tools.bench.timing import figure, summary, timed


def _states_at(path: Path, marks: Sequence[int]) -> Iterator[tuple[int, State, State]]:
    """For each mark m: the state once m - 1 attempts ended, and once m attempts ended."""
    log = FileStore(path).read()
    state = State()
    wanted = sorted(marks)
    before: State | None = None
    for event in log.events:
        evolve(state, event)
        if state.pending is not None or not wanted:
            continue
        ended = len(state.attempts)
        if ended == wanted[0] - 1 and before is None:
            before = copy.deepcopy(state)
        elif ended >= wanted[0] and before is not None:
            yield wanted.pop(0), before, copy.deepcopy(state)
            before = None
        if not wanted:
            return


def _render(state: State) -> str:
    position = memory_file.Position(events=state.event_count, last=state.last_event or "")
    return memory_file.render_memory(None, state, effective_policy(state), position)


def changed_bytes(before: str, after: str) -> tuple[int, int]:
    """Lines and bytes (UTF-8) that differ between two renderings (removed + added)."""
    lines = bytes_ = 0
    for line in difflib.unified_diff(before.splitlines(True), after.splitlines(True), n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        lines += 1
        bytes_ += len(line[1:].encode())
    return lines, bytes_


def bench_memory(path: Path, marks: Sequence[int], repeats: int) -> dict[str, Any]:
    """MEMORY.md render time and size at each mark, and the bytes one new attempt changes."""
    rows: dict[str, Any] = {}
    for attempts, before, state in _states_at(path, marks):
        samples = [timed(partial(_render, state)) for _ in range(repeats)]
        text = _render(state)
        lines, changed = changed_bytes(_render(before), text)
        rows[str(attempts)] = {
            "render_s": summary(samples),
            "size_bytes": len(text.encode()),
            "changed_by_next_attempt": {"lines": lines, "bytes": changed},
        }
    sizes = sorted(rows, key=int)
    low, high = sizes[0], sizes[-1]
    t_low = rows[low]["render_s"]["median"]
    t_high = rows[high]["render_s"]["median"]
    exponent = math.log(t_high / t_low) / math.log(int(high) / int(low))
    largest = max(r["size_bytes"] for r in rows.values())
    most_changed = max(r["changed_by_next_attempt"]["bytes"] for r in rows.values())
    return {
        "render_time": figure(
            what=f"MEMORY.md render time from {low} to {high} attempts (scaling exponent)",
            value=t_high,
            reference=t_low,
            unit="s",
            ratio=exponent,
            ratio_is=f"log(t({high})/t({low})) / log({high}/{low}): 1 is linear",
            goal="≤ 1 (linear or better)",
            met=exponent <= 1.0,
            reference_is=f"render time at {low} attempts",
            per_size=rows,
        ),
        "size": figure(
            what="MEMORY.md size, largest over the sizes",
            value=largest,
            reference=32 * 1024,
            unit="bytes",
            ratio=largest / (32 * 1024),
            ratio_is="size / 32 KiB",
            goal="≤ 1 (bounded: stays under 32 KiB however long the campaign)",
            met=largest <= 32 * 1024,
            reference_is="32 KiB, the bound memory_sections.py promises",
        ),
        "changed_per_attempt": figure(
            what="bytes of MEMORY.md changed by one new attempt, largest over the sizes",
            value=most_changed,
            reference=largest,
            unit="bytes",
            ratio=most_changed / largest,
            ratio_is="changed bytes / file size",
            goal="≤ 0.25 (a few lines, not a rewrite)",
            met=most_changed / largest <= 0.25,
            reference_is="the file's size",
        ),
    }
