"""The dashboard over many ops: `tune-ledger dashboard` against `audit --all` on the same ops.

    python -m tools.bench.dashboard --ops 200      # prints one JSON figure

SYNTHETIC BENCH DATA: each op is a seeded synthetic campaign (tools/bench/ledgers.py) of about
30 to 300 attempts, the size DESIGN §0 plans for, written under /tmp with its MEMORY.md rendered,
so audit finds every op clean. The dashboard audits every op itself and then renders it, so
its time is audit's plus the rendering; the two commands run alternately, as processes, and
each run's CPU time is kept beside its wall time (the steadier figure on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger.shell.api import OpLedger
from tools.bench.commands import cli
from tools.bench.ledgers import CACHE, code_digest, write_campaign
from tools.bench.timing import PROCESS_ENV, alternate, process, summary

MIN_ATTEMPTS, MAX_ATTEMPTS = 30, 300
# A synthetic campaign takes about this many events per attempt (start, measure, verdict, and
# its share of the points, stages and skills around them).
EVENTS_PER_ATTEMPT = 3.4


def op_name(number: int) -> str:
    """The name of the `number`-th generated op."""
    return f"op{number:03d}"


def attempts_of(number: int) -> int:
    """How many attempts the `number`-th op's campaign is planned for: spread over 30..300."""
    return MIN_ATTEMPTS + (number * 97) % (MAX_ATTEMPTS - MIN_ATTEMPTS + 1)


def write_ops(root: Path, count: int) -> dict[str, int]:
    """Generate `count` synthetic ops under `root/custom/` with their MEMORY.md; totals."""
    events = attempts = 0
    for number in range(count):
        op = op_name(number)
        planned = round(attempts_of(number) * EVENTS_PER_ATTEMPT)
        events += write_campaign(root, planned, seed=number + 1, op=op)
        attempts += len(OpLedger(root, op).load().state.attempts)
    return {"ops": count, "events": events, "attempts": attempts}


def cached_ops(count: int, cache: Path = CACHE) -> tuple[Path, dict[str, int]]:
    """The root of `count` generated ops, generated on a cache miss."""
    root = cache / f"dashboard-{count}ops-{code_digest()}"
    meta = root / "bench-meta.json"
    if meta.exists():
        return root, json.loads(meta.read_text())
    shutil.rmtree(root, ignore_errors=True)
    totals = write_ops(root, count)
    meta.write_text(json.dumps(totals, sort_keys=True) + "\n")
    return root, totals


def cpu_and_wall(argv: Sequence[str]) -> tuple[float, float]:
    """The CPU seconds (user + system) and wall seconds of one process run to success: on a
    machine others share, the CPU time is the steadier of the two."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = process(argv, PROCESS_ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def bench_dashboard(count: int, repeats: int = 3, cache: Path = CACHE) -> dict[str, Any]:
    """Seconds of `dashboard` and of `audit --all` over the same `count` ops, and their ratio."""
    root, totals = cached_ops(count, cache)
    out = root.parent / f"{root.name}-site"
    shutil.rmtree(out, ignore_errors=True)
    command = cli(root)
    dashboard = [*command, "dashboard", "--out", str(out)]
    audit = [*command, "audit", "--all"]
    process(dashboard, PROCESS_ENV)  # compiles modules and writes the site once: not measured
    runs: dict[str, list[tuple[float, float]]] = {"dashboard": [], "audit": []}

    def measure(name: str, argv: list[str]) -> float:
        cpu, wall = cpu_and_wall(argv)
        runs[name].append((cpu, wall))
        return wall

    site, audited = alternate(
        lambda: measure("dashboard", dashboard), lambda: measure("audit", audit), repeats=repeats
    )
    value, reference = summary(site)["median"], summary(audited)["median"]
    cpu = {name: summary([c for c, _ in taken]) for name, taken in runs.items()}
    return {
        "what": f"`tune-ledger dashboard` over {count} synthetic ops ({totals['attempts']} "
        f"attempts, {totals['events']} events), seconds (medians; alternated runs)",
        "dashboard_s": summary(site),
        "audit_all_s": summary(audited),
        "ratio": value / reference,
        "cpu_s": cpu,
        "cpu_ratio": cpu["dashboard"]["median"] / cpu["audit"]["median"],
        "synthetic": True,
        "site_bytes": sum(p.stat().st_size for p in out.rglob("*.html")),
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Print the dashboard figure as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    json.dump(bench_dashboard(args.ops, args.repeats, args.cache), sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
