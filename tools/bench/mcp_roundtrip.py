"""The MCP server's round trip beside the CLI process, on synthetic ledgers of 100, 10k and 100k
events (tools/bench/generate.py), in one run: a `status` call, and a `try` + `verify` pair.

Goals (issue 17): a server call at 10k events at least 20x faster than the CLI process doing
the same, and a server call at 100k events at most 1.5x its cost at 100 events.

    python -m tools.bench.mcp_roundtrip [--quick]      (prints one JSON report)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tools.bench.campaign import OP
from tools.bench.ledgers import cached_ledger

SIZES = (100, 10_000, 100_000)
_TRY_ARGUMENT = {"set": "change", "algorithm": "algorithm"}


def _pythonpath() -> str:
    """This checkout first, then whatever PYTHONPATH already held."""
    here = str(Path(__file__).resolve().parents[2])
    return os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)


def _prepared_root(size: int, into: Path) -> Path:
    """A copy of the cached campaign of `size` events with its pending attempt abandoned."""
    source, _meta = cached_ledger(size, log=lambda m: print(m, file=sys.stderr))
    root = into / f"{size}ev"
    shutil.copytree(source / "custom", root / "custom")
    # A campaign may end with an attempt pending; abandoning fails harmlessly when none is.
    subprocess.run(
        [sys.executable, "-m", "ledger", "--root", str(root), "--json", "abandon", OP,
         "pending", "--reason", "bench set-up"],
        check=False,
        capture_output=True,
    )  # fmt: skip
    return root


def _stage(root: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ledger", "--root", str(root), "--json", "status", OP],
        check=True,
        capture_output=True,
    )
    return str(json.loads(done.stdout)["stage"])


def _cli(root: Path, *argv: str) -> float:
    """Seconds one `tune-ledger --json ARGV` process takes, start to exit."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ledger", "--root", str(root), "--json", *argv],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


class Changes:
    """Fresh single-parameter changes, each faster than the last (adopted, never a retry)."""

    def __init__(self, start: int, stage: str) -> None:
        self.number = start
        self.time_us = 50.0
        # The algorithm stage takes algorithm changes only (R5); the others one parameter.
        self.option = "algorithm" if stage == "algorithm" else "set"

    def next(self) -> tuple[str, str]:
        """The next change (`--set` or `--algorithm` value) and the time to verify it with."""
        self.number += 1
        self.time_us *= 0.97
        if self.option == "algorithm":
            # Unlike any earlier idea (R9 compares their text): a digest of the number.
            idea = hashlib.sha256(str(self.number).encode()).hexdigest()
            return f"bench idea {idea}", f"{self.time_us:.3f}us"
        return f"stitch_function_max_num={self.number}", f"{self.time_us:.3f}us"


def _cli_figures(root: Path, repeats: int, changes: Changes) -> dict[str, list[float]]:
    status = [_cli(root, "status", OP) for _ in range(repeats)]
    pairs = []
    for _ in range(repeats):
        change, took = changes.next()
        pairs.append(
            _cli(root, "try", OP, f"--{changes.option}", change)
            + _cli(
                root,
                "verify",
                OP,
                "pending",
                "--output",
                "y=true",
                "--layout-exit",
                "0",
                "--time",
                took,
            )
        )
    return {"status": status, "try_verify": pairs}


async def _server_figures(root: Path, repeats: int, changes: Changes) -> dict[str, list[float]]:
    # The SDK hands a server only a few safe variables of the environment: PYTHONPATH is
    # passed on, so the server runs this checkout's code like the CLI processes beside it.
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ledger", "--root", str(root), "mcp"],
        env={**os.environ, "PYTHONPATH": _pythonpath()},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()

        async def timed(name: str, arguments: dict[str, Any]) -> float:
            started = time.perf_counter()
            result = await client.call_tool(name, arguments)
            if result.is_error:
                raise RuntimeError(f"{name}: {result.content}")
            return time.perf_counter() - started

        await timed("status", {"op": OP})  # the first call replays the ledger once
        status = [await timed("status", {"op": OP}) for _ in range(repeats)]
        pairs = []
        for _ in range(repeats):
            change, took = changes.next()
            pairs.append(
                await timed("try", {"op": OP, _TRY_ARGUMENT[changes.option]: change})
                + await timed(
                    "verify",
                    {
                        "op": OP,
                        "attempt": "pending",
                        "output": ["y=true"],
                        "layout_exit": 0,
                        "time": [took],
                    },
                )
            )
    return {"status": status, "try_verify": pairs}


def _summary(samples: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(samples) * 1000, 3),
        "min_ms": round(min(samples) * 1000, 3),
        "max_ms": round(max(samples) * 1000, 3),
    }


def measure(repeats: int, cli_repeats: int) -> dict[str, Any]:
    """The report: per size, each figure through the server and as CLI processes, and the goals."""
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-roundtrip-") as folder:
        for size in SIZES:
            root = _prepared_root(size, Path(folder))
            changes = Changes(50_000, _stage(root))
            server = anyio.run(_server_figures, root, repeats, changes)
            cli = _cli_figures(root, cli_repeats, changes)
            figures[str(size)] = {
                name: {"server": _summary(server[name]), "cli": _summary(cli[name])}
                for name in server
            }
    return {"figures": figures, "goals": _goals(figures)}


def _goals(figures: dict[str, Any]) -> dict[str, Any]:
    def median(size: int, name: str, side: str) -> float:
        return float(figures[str(size)][name][side]["median_ms"])

    goals: dict[str, Any] = {}
    for name in ("status", "try_verify"):
        speedup = median(10_000, name, "cli") / median(10_000, name, "server")
        growth = median(100_000, name, "server") / median(100, name, "server")
        goals[name] = {
            "cli_over_server_at_10k": round(speedup, 1),
            "goal_speedup": ">= 20",
            "met_speedup": speedup >= 20,
            "server_100k_over_100": round(growth, 2),
            "goal_growth": "<= 1.5",
            "met_growth": growth <= 1.5,
        }
    return goals


def main(argv: list[str] | None = None, emit: Callable[[str], None] = print) -> None:
    """Measure and print one JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args(argv)
    repeats, cli_repeats = (10, 3) if args.quick else (30, 5)
    emit(json.dumps(measure(repeats, cli_repeats), indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
