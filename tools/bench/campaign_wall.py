"""Figures: the README's campaign with measure-ahead workers and the warm worker vs today's
serial path, the warm worker alone, and a re-run of the finished campaign from scratch in a new
root with the warm measurement cache vs cold.

    python -m tools.bench.campaign_wall [--op softmax --op matmul_bias_relu] [--workers 2]

Four real campaigns (real PyPTO in its simulator, minutes each), one after the other, each in
a fresh root with the bundled op folders copied in:
(1) the reference, today's serial path: `--workers 1 --cold`, a new process for every PyPTO
    child, empty cache;
(2) `--workers N --warm`: measure-ahead, each child a fork of the warm worker
    (tools/pypto/warm.py), another empty cache;
(3) `--workers 1 --warm`: the serial path with the warm worker, another empty cache;
(4) `--workers 1 --cold` in a fourth root with (1)'s cache filled.
Each side is timed once (a campaign takes minutes), so `noise` holds one sample per side: the
machine is shared, and a single pair says nothing of its spread. A figure is met only when the
ledgers hold the same history: the same attempts (kind, stage, point, config, prior), the same
verdicts and failures, the same times, the same best.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from ledger.shell.api import OpLedger
from tools.bench.timing import figure, summary

REPO = Path(__file__).resolve().parents[2]
README_OPS = ("softmax", "matmul_bias_relu")
WORKERS_GOAL = 0.6
WARM_GOAL = 0.10
CAMPAIGN_TIMEOUT_S = 4 * 3600


def campaign_wall(
    ops: tuple[str, ...] = README_OPS,
    workers: int = 2,
    python: str = sys.executable,
    keep: Path | None = None,
    max_attempts: int | None = None,
) -> dict[str, dict[str, Any]]:
    """The three figures (`campaign_workers`, `campaign_warm_serial`, `campaign_warm_rerun`),
    each with its check that the side's history is the reference's."""
    base = Path(tempfile.mkdtemp(prefix="tune-ledger-campaign-wall-", dir=keep))
    try:
        extra = () if max_attempts is None else ("--max-attempts", str(max_attempts))
        cold_one = _campaign(base / "one", base / "cache-one", ops, 1, "--cold", python, extra)
        warm_many = _campaign(
            base / "many", base / "cache-many", ops, workers, "--warm", python, extra
        )
        warm_one = _campaign(
            base / "warm-one", base / "cache-warm-one", ops, 1, "--warm", python, extra
        )
        rerun = _campaign(base / "rerun", base / "cache-one", ops, 1, "--cold", python, extra)
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)
    reference = cold_one["wall_s"]
    ops_text = " + ".join(ops)
    reference_is = (
        "the same campaign with --workers 1 --cold (today's serial path: a new process for "
        "every PyPTO child), empty cache, same run"
    )

    def versus(side: dict[str, Any], what: str, goal: float, summaries: dict[str, Any]) -> Any:
        same = side["histories"] == cold_one["histories"]
        ratio = side["wall_s"] / reference
        return figure(
            what=f"autopilot campaign ({ops_text}), {what}",
            value=side["wall_s"],
            reference=reference,
            reference_is=reference_is,
            unit="s",
            ratio=ratio,
            ratio_is="wall(side) / wall(--workers 1 --cold)",
            goal=f"≤ {goal}",
            met=ratio <= goal and same,
            noise={"value": summary([side["wall_s"]]), "reference": summary([reference])},
            same_history=same,
            cpu_s={"value": round(side["cpu_s"], 1), "reference": round(cold_one["cpu_s"], 1)},
            summaries={"workers_1_cold": cold_one["summaries"], **summaries},
            cpu_count=os.cpu_count(),
        )

    return {
        "campaign_workers": versus(
            warm_many,
            f"--workers {workers} --warm (measure-ahead, each PyPTO child a fork of the warm "
            "worker), empty cache",
            WORKERS_GOAL,
            {f"workers_{workers}_warm": warm_many["summaries"]},
        ),
        "campaign_warm_serial": versus(
            warm_one,
            "--workers 1 --warm (each PyPTO child a fork of the warm worker), empty cache",
            WORKERS_GOAL,
            {"workers_1_warm": warm_one["summaries"]},
        ),
        "campaign_warm_rerun": versus(
            rerun,
            "from scratch in a new root, warm measurement cache (--workers 1 --cold)",
            WARM_GOAL,
            {"rerun": rerun["summaries"]},
        ),
    }


def _campaign(
    root: Path,
    cache: Path,
    ops: tuple[str, ...],
    workers: int,
    start: str,
    python: str,
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One campaign from scratch in `root` with the cache folder `cache`: its wall time, the
    autopilot's closing summaries and each op's history."""
    for op in ops:
        shutil.copytree(
            REPO / "custom" / op,
            root / "custom" / op,
            ignore=shutil.ignore_patterns(
                "events.jsonl*", "MEMORY.md", "*report*", ".tune-*", "__pycache__"
            ),
        )
    argv = [python, "-m", "tools.autopilot", "--root", str(root), "--workers", str(workers)]
    argv += [start, *extra]
    for op in ops:
        argv += ["--op", op]
    env = {
        **os.environ,
        "TUNE_LEDGER_MEASURE_CACHE": str(cache),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    print(f"campaign_wall: {' '.join(argv[1:])} (cache {cache})", file=sys.stderr, flush=True)
    # CPU of every process the campaign started and waited for (the warm worker's forks are
    # reaped by it, it by the autopilot): on a shared machine wall time also measures the
    # other jobs' load, CPU time does not.
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run(
        argv,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=CAMPAIGN_TIMEOUT_S,
        check=False,
    )
    wall = time.perf_counter() - started
    cpu = _children_cpu_s() - cpu_before
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr[-2000:]}")
    summaries = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            summaries.append(json.loads(line))
    print(f"campaign_wall: {wall:.1f} s, {cpu:.1f} s of CPU", file=sys.stderr, flush=True)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "summaries": summaries,
        "histories": {op: history(root, op) for op in ops},
    }


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def history(root: Path, op: str) -> dict[str, Any]:
    """What a campaign decided, free of ids, clocks and where a run came from: every attempt in
    order (kind, stage, point, config, prior or change, outcome, times), the best, the stop."""
    state = OpLedger(root, op).load().state
    attempts = [
        {
            "seq": a.seq,
            "kind": a.kind,
            "stage": a.stage,
            "point": a.point,
            "config": a.config,
            "prior": a.prior,
            "param": a.param,
            "status": a.status,
            "verdict": a.verdict,
            "failure": a.failure,
            "times_us": list(a.measurement.times_us) if a.measurement else None,
        }
        for a in sorted(state.attempts.values(), key=lambda a: a.seq)
    ]
    best = state.best
    return {
        "attempts": attempts,
        "best": None
        if best is None
        else {
            "config": best.config,
            "time_us": best.time_us,
            "attempt_seq": _seq(state, best.attempt),
        },
        "stopped": state.stopped,
        "baseline_us": state.target.baseline_us if state.target else None,
        "relaxations": [r.limit for r in state.relaxations],
    }


def _seq(state: Any, attempt: str | None) -> int | None:
    return None if attempt is None else state.attempts[attempt].seq


@click.command()
@click.option("--op", "ops", multiple=True, default=README_OPS, show_default=True)
@click.option("--workers", default=2, show_default=True, type=click.IntRange(min=2))
@click.option("--python", default=sys.executable, show_default=True)
@click.option(
    "--max-attempts",
    type=int,
    default=None,
    help="A shorter campaign (a smoke test, not the figure).",
)
def main(ops: tuple[str, ...], workers: int, python: str, max_attempts: int | None) -> None:
    """Run the four campaigns and print the three figures as one JSON object."""
    started = time.perf_counter()
    figures = campaign_wall(tuple(ops), workers, python, max_attempts=max_attempts)
    figures["elapsed_s"] = {"value": round(time.perf_counter() - started, 1)}
    click.echo(json.dumps(figures, indent=2, sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    main()
