"""The MCP server's round trip beside the CLI process, on synthetic ledgers of 100, 10k and 100k
events (tools/bench/generate.py), in one run: a `status` call, and a `try` + `verify` pair, the
same commands in the same stage (algorithm) at every size.

Goals (issue 17), for both: a server call at 10k events at least 20x faster than the CLI
process doing the same, and a server call at 100k events at most 1.5x its cost at 100 events.

    python -m tools.bench.mcp_roundtrip [--quick]      (prints one JSON report)

`tools.bench.run` includes these figures (`mcp`), or says `skipped` without the `mcp` SDK.
"""

from __future__ import annotations

import argparse
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

from tools.bench import prepare
from tools.bench.campaign import OP
from tools.bench.ledgers import DEFAULT_CACHE, cached_ledger
from tools.bench.timing import figure, rounded, summary

SIZES = (100, 10_000, 100_000)
CALLS = ("status", "try_verify")


def _environment() -> dict[str, str]:
    """Both sides run this checkout's code: PYTHONPATH names it first (the SDK hands a server
    only a few variables of its own environment, so it is passed explicitly)."""
    here = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": path}


def _cli_argv(root: Path, *argv: str) -> list[str]:
    return [sys.executable, "-m", "ledger", "--root", str(root), "--json", *argv]


def _run(root: Path, *argv: str) -> dict[str, Any]:
    done = subprocess.run(
        _cli_argv(root, *argv), check=False, capture_output=True, env=_environment()
    )
    return dict(json.loads(done.stdout or b"{}"))


def _prepared_root(size: int, into: Path, seed: int, cache: Path, log: Any) -> tuple[Path, float]:
    """A copy of the cached campaign of `size` events in the algorithm stage with a sampled
    best (tools/bench/prepare.py: the same commands at every size); that best's time in µs."""
    source, _meta = cached_ledger(size, seed, cache, log)
    root = into / f"{size}ev"
    shutil.copytree(source / "custom", root / "custom")
    return root, prepare.prepared(_run, root)


def _events(root: Path) -> int:
    """How many events the prepared ledger holds (one per line)."""
    with open(root / "custom" / OP / "events.jsonl", "rb") as file:
        return sum(1 for _ in file)


def _cli(root: Path, *argv: str) -> float:
    """Seconds one `tune-ledger --json ARGV` process takes, start to exit."""
    started = time.perf_counter()
    subprocess.run(_cli_argv(root, *argv), check=True, capture_output=True, env=_environment())
    return time.perf_counter() - started


class Changes:
    """Fresh algorithm ideas, never a retry (R9), each verified slower than the best, so that
    every one is rolled back (the usual fate of an idea) at every size: a fixed time would be
    adopted at one size and rolled back at another, which render different sections."""

    def __init__(self, start: int, best_us: float) -> None:
        self.number = start
        self.time_us = best_us * 1.5

    def next(self) -> tuple[str, str]:
        """The next idea (`try --algorithm`) and the time to verify it with."""
        self.number += 1
        return prepare.idea(f"mcp {self.number}"), f"{self.time_us:.3f}us"


def _verify_argv(took: str) -> list[str]:
    return ["pending", "--output", "y=true", "--layout-exit", "0", "--time", took]


def _cli_figures(root: Path, repeats: int, changes: Changes) -> dict[str, list[float]]:
    status = [_cli(root, "status", OP) for _ in range(repeats)]
    pairs = []
    for _ in range(repeats):
        change, took = changes.next()
        pairs.append(
            _cli(root, "try", OP, "--algorithm", change)
            + _cli(root, "verify", OP, *_verify_argv(took))
        )
    return {"status": status, "try_verify": pairs}


async def _server_figures(root: Path, repeats: int, changes: Changes) -> dict[str, list[float]]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ledger", "--root", str(root), "mcp"],
        env=_environment(),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()

        async def timed(name: str, arguments: dict[str, Any]) -> float:
            started = time.perf_counter()
            result = await client.call_tool(name, arguments)
            if result.is_error:
                raise RuntimeError(f"{name}: {result.content}")
            return time.perf_counter() - started

        async def pair() -> float:
            change, took = changes.next()
            try_arguments = {"op": OP, "algorithm": change}
            verify = {"op": OP, "attempt": "pending", "output": ["y=true"], "layout_exit": 0}
            return await timed("try", try_arguments) + await timed(
                "verify", {**verify, "time": [took]}
            )

        # Warm up, untimed: `status` is answered from the view cache without replaying, so
        # `log` loads the ledger once, and one pair renders once (the kept indexes are built).
        await timed("log", {"op": OP, "limit": 1})
        await pair()
        await timed("status", {"op": OP})
        status = [await timed("status", {"op": OP}) for _ in range(repeats)]
        pairs = [await pair() for _ in range(repeats)]
    return {"status": status, "try_verify": pairs}


Samples = dict[str, dict[str, dict[str, list[float]]]]


def measure(
    repeats: int, cli_repeats: int, seed: int = 1, cache: Path = DEFAULT_CACHE, log: Any = None
) -> tuple[Samples, dict[str, int]]:
    """Seconds per call, by size, call and side ("server", "cli"), all in one run; and how
    many events each size's ledger held once prepared."""
    import anyio

    samples: Samples = {}
    events: dict[str, int] = {}  # how many events each prepared ledger held
    with tempfile.TemporaryDirectory(prefix="mcp-roundtrip-") as folder:
        for size in SIZES:
            if log:
                log(f"MCP round trip, {size} events")
            root, best_us = _prepared_root(size, Path(folder), seed, cache, log)
            events[str(size)] = _events(root)
            changes = Changes(50_000, best_us)
            server = anyio.run(_server_figures, root, repeats, changes)
            cli = _cli_figures(root, cli_repeats, changes)
            samples[str(size)] = {n: {"server": server[n], "cli": cli[n]} for n in CALLS}
    return samples, events


def figures(samples: Samples) -> dict[str, Any]:
    """The report's figures: per call, the speed-up over the CLI at 10k events and the growth
    from 100 to 100k events, each with its noise; every median beside them (`per_size`)."""
    out: dict[str, Any] = {}
    small, middle, large = (str(s) for s in SIZES)
    for name in CALLS:
        server_10k, cli_10k = samples[middle][name]["server"], samples[middle][name]["cli"]
        value, reference = statistics.median(server_10k), statistics.median(cli_10k)
        speedup = figure(
            what=f"{name} through the MCP server at 10k events (median round trip, warm server)",
            value=value,
            reference=reference,
            reference_is=f"the same {name} as `tune-ledger --json` processes, same ledger",
            unit="s",
            ratio=reference / value,
            ratio_is="cli_time / server_time (times faster)",
            goal="≥ 20",
            met=reference / value >= 20,
            noise={"value": summary(server_10k), "reference": summary(cli_10k)},
        )
        server_large, server_small = samples[large][name]["server"], samples[small][name]["server"]
        value, reference = statistics.median(server_large), statistics.median(server_small)
        growth = figure(
            what=f"{name} through the MCP server at 100k events (median round trip)",
            value=value,
            reference=reference,
            reference_is=f"the same {name} through the server at 100 events",
            unit="s",
            ratio=value / reference,
            ratio_is="server_time_100k / server_time_100",
            goal="≤ 1.5",
            met=value / reference <= 1.5,
            noise={"value": summary(server_large), "reference": summary(server_small)},
        )
        per_size = {
            size: {
                side: rounded(statistics.median(samples[size][name][side]))
                for side in ("server", "cli")
            }
            for size in samples
        }
        out[name] = {"speedup_10k": speedup, "growth_100k": growth, "per_size": per_size}
    return out


def bench_mcp(
    repeats: int, cli_repeats: int, seed: int, cache: Path, log: Callable[[str], None]
) -> dict[str, Any]:
    """The figures, or why they were skipped (the `mcp` SDK is the optional extra `mcp`)."""
    try:
        import mcp  # noqa: F401
    except ImportError as e:
        return {"skipped": f"the mcp SDK is not installed ({e}); pip install -e '.[mcp]'"}
    samples, events = measure(repeats, cli_repeats, seed, cache, log)
    return {**figures(samples), "events": events}


def main(argv: list[str] | None = None, emit: Callable[[str], None] = print) -> None:
    """Measure and print one JSON report."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args(argv)
    repeats, cli_repeats = (10, 3) if args.quick else (30, 5)
    report = bench_mcp(
        repeats, cli_repeats, 1, DEFAULT_CACHE, lambda m: print(m, file=sys.stderr, flush=True)
    )
    emit(json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    main()
