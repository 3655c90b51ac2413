"""Benchmark: a `tune-ledger --json status` process vs `python -c "import click"`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tools.bench.campaign import OP
from tools.bench.ledgers import count_lines, ledger_file
from tools.bench.processes import PROCESS_ENV, UNCACHED, process_time, status_argv
from tools.bench.timing import alternate, figure, rounded, summary


def import_costs(root: Path, top: int = 12) -> dict[str, Any]:
    """What `status` imports (python -X importtime): total, and self time by top package."""
    code = "import sys; from ledger.cli import run; sys.argv[0] = 'tune-ledger'; run()"
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            code,
            "--root",
            str(root),
            "--json",
            "status",
            OP,
        ],
        capture_output=True,
        text=True,
        check=True,
        env=PROCESS_ENV,
    )
    by_package: dict[str, float] = {}
    modules = []
    total = 0.0
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|")
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        module = name.strip()
        if depth == 0:
            total += int(cumulative_us) / 1000
        package = module.split(".")[0]
        by_package[package] = by_package.get(package, 0.0) + int(self_us) / 1000
        modules.append((int(cumulative_us) / 1000, module))
    ranked = sorted(by_package.items(), key=lambda item: -item[1])[:top]
    heaviest = sorted(modules, reverse=True)[:top]
    return {
        "total_ms": round(total, 1),
        "self_ms_by_package": {name: round(ms, 1) for name, ms in ranked},
        "heaviest_cumulative_ms": {name: round(ms, 1) for ms, name in heaviest},
    }


def bench_startup(root: Path, repeats: int) -> dict[str, Any]:
    """`tune-ledger --json status` on a small ledger vs `python -c "import click"` (≤ 2×)."""
    status = status_argv(root)
    click = [sys.executable, "-c", "import click"]
    process_time(status)
    status_s, click_s = alternate(
        lambda: process_time(status), lambda: process_time(click), repeats=repeats
    )
    value, reference = min(status_s), min(click_s)
    uncached_s = [process_time(status, env=UNCACHED) for _ in range(repeats)]
    return figure(
        what="tune-ledger --json status OP on a small ledger, whole process (best of N; the "
        "first run wrote the view cache, so these are hits)",
        uncached_s=rounded(min(uncached_s)),
        value=value,
        reference=reference,
        unit="s",
        ratio=value / reference,
        ratio_is="status_time / import_click_time",
        goal="≤ 2",
        met=value / reference <= 2,
        reference_is='python -c "import click" (same interpreter)',
        noise={"value": summary(status_s), "reference": summary(click_s)},
        events=count_lines(ledger_file(root)),
        import_costs=import_costs(root),
    )
