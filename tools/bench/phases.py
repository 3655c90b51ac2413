"""Benchmark detail: where a whole command's wall time goes, by layer (issue 19 goal 1).

A command process is the interpreter's start (`python -c pass`, which imports `site`), the
imports of the modules it needs, its own work, and its exit. The imports are read from
`python -X importtime` (each module's self time, the least of N runs, so a disturbed run does
not count): those a bare interpreter imports too are left out (they are in its start), those
`python -c "import click"` imports count as click's (the standard library it needs too), the
rest summed by layer. What is left of the command's best wall time is its own work and exit.
`-X importtime` adds a little to each import, so the layers are a slight overestimate; the
figure says where the time goes, the ratios to click are in `commands.NAME.vs_click`.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tools.bench.processes import PROCESS_ENV

# The layers a module is counted in, first match wins: the design's floor (click, attrs,
# cattrs, the event schema), then the project's own layers, then the standard library's
# modules the project imports (json, hashlib, pickle, ...).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("click", ("click",)),
    ("attrs", ("attr", "attrs")),
    ("cattrs", ("cattrs",)),
    ("numpy", ("numpy",)),
    ("ledger.schema", ("ledger.schema",)),
    ("ledger.log", ("ledger.log",)),
    ("ledger.domain", ("ledger.domain",)),
    ("stages", ("stages",)),
    ("ledger.projections", ("ledger.projections",)),
    ("ledger.priors", ("ledger.priors",)),
    ("ledger.shell", ("ledger.shell",)),
    ("ledger.cli", ("ledger",)),  # the package, its errors and the CLI's modules
)
OTHER = "stdlib and others"

_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| *(\S+)")


def layer_of(module: str, clicks: frozenset[str] = frozenset()) -> str:
    """The layer `module` is counted in (`clicks`: the modules importing click loads)."""
    if module in clicks:
        return "click"
    for layer, prefixes in LAYERS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return layer
    return OTHER


def _self_times(argv: Sequence[str]) -> dict[str, int]:
    """Each module's self import time (µs) in one run of `python -X importtime ARGV`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        check=False,
        env=PROCESS_ENV,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]}")
    found: dict[str, int] = {}
    for line in done.stderr.splitlines():
        match = _LINE.match(line)
        if match:
            found[match.group(3)] = int(match.group(1))
    return found


def _least(runs: list[dict[str, int]]) -> dict[str, int]:
    """Per module imported by every run, its least self time: a module only some runs
    import (a first run that missed a cache and replayed) is not the command's steady cost."""
    common = set(runs[0]).intersection(*runs[1:])
    return {module: min(run[module] for run in runs) for module in runs[0] if module in common}


def _wall(argv: Sequence[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=PROCESS_ENV
    )
    return time.perf_counter() - started


def breakdown(root: Path, commands: Mapping[str, Sequence[str]], repeats: int) -> dict[str, Any]:
    """For each named command (its arguments after `--json`, run on `root`): its best wall
    time, the bare interpreter's, the imports by layer (ms) and what is left (its work)."""
    bare_argv = [sys.executable, "-c", "pass"]
    startup = _least([_self_times(["-c", "pass"]) for _ in range(repeats)])
    clicks = frozenset(_least([_self_times(["-c", "import click"]) for _ in range(repeats)]))
    bare = min(_wall(bare_argv) for _ in range(repeats))
    found: dict[str, Any] = {"bare_interpreter_ms": round(bare * 1000, 1)}
    for name, args in commands.items():
        argv = ["-m", "ledger", "--root", str(root), "--json", *args]
        runs, walls = [], []
        for _ in range(repeats):  # alternated, so drift hits both alike
            runs.append(_self_times(argv))
            walls.append(_wall([sys.executable, *argv]))
        least = _least(runs)
        layers: dict[str, float] = {}
        for module, micros in least.items():
            if module not in startup:
                layer = layer_of(module, clicks)
                layers[layer] = layers.get(layer, 0.0) + micros / 1000
        imports = sum(layers.values())
        wall = min(walls) * 1000
        found[name] = {
            "wall_ms": round(wall, 1),
            "imports_ms": round(imports, 1),
            "imports_by_layer_ms": {k: round(v, 1) for k, v in sorted(layers.items())},
            "modules": len([m for m in least if m not in startup]),
            "work_and_exit_ms": round(wall - bare * 1000 - imports, 1),
        }
    return found
