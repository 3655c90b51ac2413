"""Bench ledgers brought to the same place at every size, so a growth figure compares the same
commands doing the same work.

The synthetic campaigns end where their plan stops: the one of 100 events in a config stage
(where a change is `candidate` or `try --set`), those of 10k and 100k events in the algorithm
stage (`try --algorithm`). A figure of 100k against 100 events between two different commands,
or between a rollback and an adoption (which re-render different MEMORY.md sections), or a
bootstrap verdict and a threshold one (numpy imported on one side only), says nothing about
growth. So every size is first taken, as an agent would take it, to the algorithm stage with a
best measured from several samples, and the commands then measured are the same at every size.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tools.bench.campaign import OP

# `tune-ledger --root ROOT --json ARGV` as a process, its JSON output (an error is a key).
Run = Callable[..., dict[str, Any]]

CONFIG_STAGES = ("frontend", "swimlane", "incore")

# The prepared best's samples, as fractions of the campaign's best before: a faster idea,
# adopted, whose samples give every later verdict with samples of its own a bootstrap interval.
BEST_SAMPLES = (0.80, 0.79, 0.81)


def step(run: Run, root: Path, *argv: str) -> dict[str, Any]:
    """One set-up command, which must succeed."""
    done = run(root, *argv)
    if "error" in done:
        raise RuntimeError(f"bench set-up: {' '.join(argv)}: {done['error']}")
    return done


def to_algorithm_stage(run: Run, root: Path) -> None:
    """Take the campaign under `root` to the algorithm stage with no attempt pending: close
    its point, exit each config stage left (a point opened and closed in each), a report, enter
    the algorithm stage. About ten events on a campaign still in a config stage; none on one
    already there."""
    status = run(root, "status", OP)
    if status.get("pending"):
        step(run, root, "abandon", OP, "pending", "--reason", "bench set-up")
    stage = str(status["stage"])
    if stage == "algorithm":
        return
    for later in CONFIG_STAGES[CONFIG_STAGES.index(stage) :]:
        if later != stage:
            step(run, root, "stage", "enter", OP, later)
        point = status.get("open_point") if later == stage else None
        if not point:
            point = f"bench-{later}"
            step(run, root, "point", "open", OP, point)
        step(run, root, "point", "close", OP, str(point), "--reason", "bench set-up")
        step(run, root, "stage", "exit", OP, later)
        if f"tune-{later}" in status.get("skills", ()) and later == stage:
            step(run, root, "skill", "unload", OP, f"tune-{later}")
    step(run, root, "report", OP)
    step(run, root, "stage", "enter", OP, "algorithm")


def idea(tag: str) -> str:
    """An algorithm idea no earlier one resembles (R9 compares their words)."""
    digest = hashlib.sha256(tag.encode()).hexdigest()
    return " ".join(digest[i : i + 7] for i in range(0, 42, 7))


def adopt_sampled_best(run: Run, root: Path) -> float:
    """Adopt one faster idea measured with several samples (BEST_SAMPLES); its median time in
    µs, the best every later verdict compares with."""
    before = float(run(root, "status", OP)["best"]["time_us"])
    step(run, root, "try", OP, "--algorithm", idea("bench prepared best"))
    times = [arg for f in BEST_SAMPLES for arg in ("--time", f"{before * f:.3f}us")]
    verdict = step(
        run, root, "verify", OP, "pending", "--output", "y=true", "--layout-exit", "0", *times
    )
    best = float(run(root, "status", OP)["best"]["time_us"])
    if best >= before:
        raise RuntimeError(f"bench set-up: the prepared best was not adopted: {verdict}")
    return best


def prepared(run: Run, root: Path) -> float:
    """The campaign under `root` in the algorithm stage with a sampled best; that best's time
    in µs (verify slower than it, and every verdict is a rollback)."""
    to_algorithm_stage(run, root)
    return adopt_sampled_best(run, root)
