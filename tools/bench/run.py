"""The ledger core benchmark: every figure beside its reference, printed as one JSON report.

    python -m tools.bench.run            # full: 10k, 100k and 1M events (the 1M ledger is
                                         # generated once, then cached under /tmp)
    python -m tools.bench.run --quick    # the same on smaller sizes, in under two minutes

Each figure has a `value`, a `reference` (the anchor it is measured against), their `ratio`,
the `goal` for the ratio and whether it is `met`, with units named and the noise of both sides
(min, median, max over the repeats). Each benchmark is a module of tools/bench; ledgers are
synthetic (tools/bench/campaign.py, generate.py) and live under /tmp only; nothing is written
inside the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ledger import __version__
from tools.bench import ledgers
from tools.bench.append import bench_append
from tools.bench.autopilot_share import autopilot_share
from tools.bench.campaign import SYNTHETIC
from tools.bench.campaign_wall import campaign_wall
from tools.bench.commands import bench_commands
from tools.bench.execute import bench_execute
from tools.bench.incremental import bench_incremental
from tools.bench.ledgers import DEFAULT_CACHE, ledger_file
from tools.bench.mcp_roundtrip import bench_mcp
from tools.bench.memory import bench_memory
from tools.bench.optuna_compare import bench_optuna
from tools.bench.replay import bench_replay
from tools.bench.startup import bench_startup


def machine() -> dict[str, Any]:
    """Where the figures were measured."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_gib = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        first = Path("/proc/meminfo").read_text().splitlines()[0]
        memory_gib = round(int(first.split()[1]) / 2**20, 1)
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": memory_gib,
        "orjson": orjson.__version__,
        "tune_ledger": __version__,
        "bench_tmp": tempfile.gettempdir(),
    }


@dataclass(frozen=True)
class Plan:
    """The sizes and repeats of one mode of the benchmark."""

    replay: tuple[int, ...]  # ledger sizes (events) of the replay figures
    incremental: int  # the long ledger of the incremental figure
    repeats: dict[int, int]  # replay repeats per ledger size
    append: int  # appends timed (execute: half as many)
    startup: int  # processes per side of the startup figure
    process_repeats: int  # processes per side of the incremental and Optuna figures
    command_rounds: int  # rounds of every command, at each size of COMMAND_SIZES
    mcp_repeats: int = 20  # calls per figure through the MCP server (its CLI side: above)


SIZES = {
    "full": Plan(
        replay=(10_000, 100_000, 1_000_000),
        incremental=1_000_000,
        repeats={10_000: 7, 100_000: 5, 1_000_000: 3},
        append=40,
        startup=10,
        process_repeats=3,
        command_rounds=3,
    ),
    "quick": Plan(
        replay=(10_000, 100_000),
        incremental=100_000,
        repeats={10_000: 5, 100_000: 2},
        append=20,
        startup=5,
        process_repeats=2,
        command_rounds=2,
        mcp_repeats=10,
    ),
}
SMALL_EVENTS = 1_000
COMMAND_SIZES = (100, 100_000)  # every command, as a process: issue 19's two sizes
APPEND_EVENTS = 10_000
MEMORY_MARKS = (100, 1_000, 10_000)
OPTUNA_ATTEMPTS = 10_000


def build_report(
    mode: str,
    seed: int,
    cache: Path,
    autopilot_log: Path | None,
    log: Callable[[str], None],
    campaign_ops: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run every figure of `mode` ("full" or "quick") and return the report."""
    plan = SIZES[mode]
    started = time.perf_counter()
    report: dict[str, Any] = {
        "mode": mode,
        "seed": seed,
        "machine": machine(),
        "data": SYNTHETIC,
        "figures": {},
    }
    figures = report["figures"]
    roots: dict[int, Path] = {}
    for events in sorted({SMALL_EVENTS, *COMMAND_SIZES, *plan.replay, plan.incremental}):
        roots[events], _meta = ledgers.cached_ledger(events, seed, cache, log)
    campaign, campaign_meta = ledgers.cached_ledger(0, seed, cache, log, attempts=OPTUNA_ATTEMPTS)
    with tempfile.TemporaryDirectory(prefix="tune-ledger-bench-") as tmp:
        scratch = Path(tmp)
        for events in plan.replay:
            log(f"replay vs parse, {events} events")
            figures[f"replay_{events}"] = bench_replay(
                ledger_file(roots[events]), plan.repeats[events], events
            )
        log("durable append")
        figures["append"] = bench_append(scratch, seed, APPEND_EVENTS, plan.append)
        log("OpLedger.execute")
        figures["execute"] = bench_execute(scratch, seed, APPEND_EVENTS, plan.append // 2)
        log("startup")
        figures["startup"] = bench_startup(roots[SMALL_EVENTS], plan.startup)
        log("incremental status")
        figures["incremental"] = bench_incremental(
            roots[SMALL_EVENTS], roots[plan.incremental], plan.process_repeats
        )
        log("every command, as a process")
        figures["commands"] = bench_commands(
            roots[COMMAND_SIZES[0]], roots[COMMAND_SIZES[1]], plan.command_rounds, log
        )
        log("MEMORY.md")
        figures["memory"] = bench_memory(ledger_file(campaign), MEMORY_MARKS, 5)
        log("optuna")
        figures["optuna"] = bench_optuna(campaign, cache, plan.process_repeats)
        figures["optuna"]["campaign"] = campaign_meta
    log("MCP round trip")
    figures["mcp"] = bench_mcp(plan.mcp_repeats, plan.process_repeats, seed, cache, log)
    figures["autopilot_share"] = autopilot_share(autopilot_log)
    if campaign_ops:
        log(
            f"real campaigns ({' + '.join(campaign_ops)}): workers 1 cold, workers 2 warm, "
            "workers 1 warm, warm-cache re-run"
        )
        figures.update(campaign_wall(campaign_ops))
    else:
        skipped = {"skipped": "four real PyPTO campaigns (20-30 min): pass --campaign"}
        for name in ("campaign_workers", "campaign_warm_serial", "campaign_warm_rerun"):
            figures[name] = skipped
    report["goals_met"] = goals_met(figures)
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    return report


def goals_met(figures: dict[str, Any]) -> dict[str, bool | None]:
    """Every figure's `met`, flattened by name."""
    found: dict[str, bool | None] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict) and "met" in node and "goal" in node:
            found[prefix] = node["met"]
            walk(f"{prefix}.floor", node.get("floor"))  # a goal against the floor (issue 19)
        elif isinstance(node, dict):
            for key, value in node.items():
                if key not in ("noise", "per_size", "machine"):
                    walk(f"{prefix}.{key}" if prefix else key, value)

    walk("", figures)
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark and print one JSON report on stdout (progress on stderr)."""
    parser = argparse.ArgumentParser(description="tune-ledger core benchmark")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, < 2 minutes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help="where generated ledgers are kept (default %(default)s)",
    )
    parser.add_argument(
        "--autopilot-log",
        type=Path,
        default=None,
        help="an autopilot run's output, for the ledger's share of wall time",
    )
    parser.add_argument(
        "--campaign",
        action="append",
        default=[],
        metavar="OP",
        help="also time the autopilot campaign of OP (repeatable; the README's: softmax and "
        "matmul_bias_relu) with --workers 2 vs 1 and a warm re-run (needs the pypto extra)",
    )
    args = parser.parse_args(argv)
    report = build_report(
        "quick" if args.quick else "full",
        args.seed,
        args.cache,
        args.autopilot_log,
        lambda m: print(m, file=sys.stderr, flush=True),
        tuple(args.campaign),
    )
    print(json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    main()
