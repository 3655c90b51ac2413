"""Generated bench ledgers on disk: cached under /tmp by size, seed and a digest of the generator.

python -m tools.bench.ledgers --events 10000 100000   # prints where each one is
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger import __version__
from tools.bench.campaign import ATTEMPT_EVENTS, OP, SYNTHETIC
from tools.bench.generate import Driver, SealSink

DEFAULT_CACHE = Path(os.environ.get("TUNE_LEDGER_BENCH_CACHE", "/tmp/tune-ledger-bench"))
REPO = Path(__file__).resolve().parents[2]
# The generator's modules and the event schema (see code_digest for why not every module).
_GENERATOR = (
    REPO / "tools" / "bench" / "campaign.py",
    REPO / "tools" / "bench" / "generate.py",
    REPO / "ledger" / "schema" / "events.py",
)


def ledger_file(root: Path) -> Path:
    """The bench op's ledger under `root`."""
    return root / "custom" / OP / "events.jsonl"


def count_lines(path: Path) -> int:
    """How many lines (events) a ledger file holds, read in 1 MiB chunks."""
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def code_digest() -> str:
    """A digest of the generator and the event schema: the version part of the cache key."""
    # Not every module that shapes the bytes: other engineers change the deciders and replay
    # all day, and a ledger made by yesterday's deciders is as realistic a workload. A schema
    # change (ledger/schema/events.py) or a generator change does make new ledgers.
    sha = hashlib.sha256(__version__.encode())
    for path in _GENERATOR:
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()[:12]


def cache_root(size: int, seed: int, cache: Path = DEFAULT_CACHE, unit: str = "ev") -> Path:
    """The root folder (holding custom/bench/events.jsonl) of a cached campaign."""
    return cache / f"{size}{unit}-seed{seed}-{code_digest()}"


def write_ledger(
    root: Path, events: int, seed: int, *, attempts: int | None = None
) -> dict[str, Any]:
    """Generate a campaign of `events` events (or `attempts` ended attempts, planned as
    `events` events) into `root/custom/bench/events.jsonl`, atomically; its metadata."""
    folder = root / "custom" / OP
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "events.jsonl"
    partial = folder / f".events.jsonl.partial-{os.getpid()}"
    started = time.perf_counter()
    with open(partial, "wb", buffering=1 << 20) as out:
        driver = Driver(seed, events, SealSink(out))
        if attempts is None:
            driver.run(events)
        else:
            driver.run_attempts(attempts)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)
    meta = {
        "synthetic": SYNTHETIC,
        "seed": seed,
        "events": driver.state.event_count,
        "attempts": len(driver.state.attempts),
        "bytes": path.stat().st_size,
        "generate_s": round(time.perf_counter() - started, 2),
        "code": code_digest(),
    }
    (root / "bench-meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return meta


def cached_ledger(
    events: int,
    seed: int = 1,
    cache: Path = DEFAULT_CACHE,
    log: Any = None,
    *,
    attempts: int | None = None,
) -> tuple[Path, dict[str, Any]]:
    """The root of a generated campaign of `events` events (or of `attempts` attempts),
    generating it on a cache miss."""
    if attempts is None:
        root = cache_root(events, seed, cache)
    else:
        root = cache_root(attempts, seed, cache, unit="att")
        events = attempts * ATTEMPT_EVENTS
    meta_path = root / "bench-meta.json"
    if meta_path.exists() and (root / "custom" / OP / "events.jsonl").exists():
        return root, json.loads(meta_path.read_text())
    if log is not None:
        what = f"{events}-event" if attempts is None else f"{attempts}-attempt"
        log(f"generating a {what} synthetic campaign (seed {seed}) into {root} ...")
    return root, write_ledger(root, events, seed, attempts=attempts)


def main(argv: Sequence[str] | None = None) -> None:
    """Generate (or find cached) synthetic bench ledgers and print where they are."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[10_000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    for events in args.events:
        root, meta = cached_ledger(
            events, args.seed, args.cache, log=lambda m: print(m, file=sys.stderr)
        )
        print(json.dumps({"root": str(root), **meta}, sort_keys=True))


if __name__ == "__main__":
    main()
