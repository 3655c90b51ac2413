"""Synthetic bench ledgers: seeded campaigns written through the API (`OpLedger.execute`, so
every rule is checked as for an agent), cached under /tmp by size, seed and code.

SYNTHETIC BENCH DATA. Every time in these ledgers is drawn from a seeded model, not measured
on any kernel; every recorded result says so (its origin's tool is `bench-synthetic`). They
exist only to time the ledger itself.

Whatever its size, a campaign ends at the same place, so that the commands a figure times do
the same work at every size: stage incore, a point just opened (that no run of rollbacks
closes), nothing pending, a best adopted, the target unmet (the model never reaches it).

    python -m tools.bench.ledgers 100 10000     # generate (or find) them; print where
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any

from ledger import __version__
from ledger.schema.events import Origin, OutputCheck
from ledger.shell.api import OpLedger
from stages import commands as cmd

OP = "bench"
SYNTHETIC = "synthetic bench data (tools/bench/ledgers.py): not a measurement"
CACHE = Path(os.environ.get("TUNE_LEDGER_BENCH_CACHE", "/tmp/tune-ledger-bench"))
# The op's kernel file: never run, but its digest binds the evidence and what the stand-in
# verifier (below) reports, as a real kernel's would.
IMPL = b"# The bench op's kernel (synthetic): the ledger hashes it and never runs it.\n"
IMPL_DIGEST = hashlib.sha256(IMPL).hexdigest()
BASE_CONFIG: dict[str, Any] = {
    "vec_tile_shape": [1, 32, 1, 64],
    "unroll_list": [4, 2, 1],
    "stitch_function_max_num": 16,
    "mg_copy_cycles": 1024,
}
# Knobs the model changes one at a time; each change takes a value never used before in the
# campaign (a counter), so no attempt is an R9 retry whatever the size.
FREE_KNOBS = ("stitch_function_max_num", "mg_copy_cycles", "l0c_reuse_depth")
STAGE_SHARES = {"frontend": 0.40, "swimlane": 0.32, "incore": 0.28}
# The time model (µs): attempts scatter around the best, pulled towards a floor that falls as
# the campaign goes on, so adopts keep happening while the target is never met.
BASELINE_US, TARGET_US = 100.0, 10.0
FLOOR_START_US, FLOOR_END_US = 40.0, 20.0
FAILURES = ("compile", "timeout", "oom", "runtime")


class _QuietLedger(OpLedger):
    """The op's ledger, leaving MEMORY.md alone while a campaign is written (it is rendered
    once at the end: re-rendering it after each of thousands of commands is the slow part)."""

    def render_memory(self, *args: Any, **kwargs: Any) -> bool:
        return False


class _Campaign:
    """One seeded campaign, command by command through `OpLedger.execute`."""

    def __init__(self, root: Path, seed: int, planned: int, op: str = OP) -> None:
        self.op = op
        self.impl_path = impl_path(op)
        self.ledger = _QuietLedger(root, op)
        self.rng = random.Random(seed)
        self.planned = planned
        self.events = 0
        self.values = itertools.count(10**6)  # far from every value of BASE_CONFIG
        self.points = itertools.count(1)
        self.state: Any = None

    def run(self, command: Any) -> None:
        """Append one command's events (a refusal is a bug of the model: it is raised)."""
        result = self.ledger.execute(command, command_line=f"bench {type(command).__name__}")
        self.events += len(result.events)
        self.state = result.state

    def origin(self) -> Origin:
        return Origin(level="reported", tool="bench-synthetic", tool_version=__version__,
                      command=SYNTHETIC)  # fmt: skip

    def setup(self) -> None:
        """Initialized, activated with both pieces of evidence, base skills, target sheet."""
        outputs = (OutputCheck(name="y", all_close=True, max_diff=3.1e-06),)
        self.run(cmd.Init(op=self.op))
        self.run(cmd.RecordCompare(outputs=outputs, impl_path=self.impl_path,
                                   impl_digest=IMPL_DIGEST, origin=self.origin()))  # fmt: skip
        self.run(cmd.RecordLayout(exit_code=0, impl_path=self.impl_path,
                                  impl_digest=IMPL_DIGEST, origin=self.origin()))  # fmt: skip
        self.run(cmd.Activate(impl_digest=IMPL_DIGEST))
        for skill in ("pypto-op-perf-tune", "perf-analyzer"):
            self.run(cmd.LoadSkill(name=skill))
        self.run(cmd.SetTarget(baseline_us=BASELINE_US, shape="32x1x4096", target_us=TARGET_US,
                               target_source="spec", source_ref="SPEC.md (synthetic)",
                               config=dict(BASE_CONFIG), origin=self.origin(),
                               baseline_samples_us=(99.2, 100.0, 100.4, 99.8, 100.9)))  # fmt: skip

    def stage(self, stage: str, end: int, last: bool) -> None:
        """Enter `stage` and tune points until `end` events; leave it unless it is the last,
        which ends with a point just opened."""
        self.run(cmd.EnterStage(stage=stage))
        self.run(cmd.LoadSkill(name=f"tune-{stage}"))
        prefix = stage[0].upper()
        while True:
            name = f"{prefix}-{next(self.points)}"
            self.run(cmd.OpenPoint(name=name))
            if last and self.events >= end:
                return
            self.point(name, end)
            if self.events >= end and not last:
                break
        self.run(cmd.ExitStage(stage=stage))
        self.run(cmd.UnloadSkill(name=f"tune-{stage}"))

    def point(self, name: str, end: int) -> None:
        """A few candidates from priors, then single changes of the best until the point is
        exhausted (R7 closes it) or the stage's events are spent, then close it."""
        rng = self.rng
        for _ in range(rng.randint(5, 8)):
            config = {**BASE_CONFIG, "vec_tile_shape": [1, 8 * rng.randint(1, 8), 1, 64],
                      "stitch_function_max_num": next(self.values)}  # fmt: skip
            self.attempt(cmd.ProposeCandidate(config=config, prior="production kernel (synthetic)"))
            if self.events >= end:
                break
        while self.state.points[name].is_open and self.events < end:
            change = cmd.TryMutation(param=rng.choice(FREE_KNOBS), value=next(self.values))
            self.attempt(change)
        if self.state.points[name].is_open:
            self.run(cmd.ClosePoint(name=name, reason="moving on (synthetic)"))
        if rng.random() < 0.05:
            self.run(cmd.AddNote(text=f"point {name}: nothing more to gain here (synthetic)"))

    def attempt(self, start: Any) -> None:
        """Start an attempt, then fail, abandon or verify it with the model's times."""
        self.run(start)
        attempt, rng, draw = pending(self.state), self.rng, self.rng.random()
        if draw < 0.06:
            category = rng.choice(FAILURES)
            self.run(cmd.Fail(attempt=attempt, category=category,
                              detail=f"{category} (synthetic)", origin=self.origin()))  # fmt: skip
        elif draw < 0.065:
            self.run(cmd.Abandon(attempt=attempt, reason="session restarted (synthetic)"))
        else:
            outputs = (OutputCheck(name="y", all_close=draw >= 0.08, max_diff=1e-6),)
            self.run(cmd.Verify(attempt=attempt, outputs=outputs, layout_exit=0,
                                times_us=self.times(), origin=self.origin(),
                                util_pct=round(rng.uniform(30, 78), 2),
                                bubble_pct=round(rng.uniform(12, 45), 2)))  # fmt: skip

    def times(self) -> tuple[float, ...]:
        """Samples around the best, never below the falling floor (so above the target)."""
        rng, best = self.rng, self.state.best
        floor = FLOOR_START_US + (FLOOR_END_US - FLOOR_START_US) * min(
            1, self.events / self.planned
        )
        best_us = best.time_us if best is not None else BASELINE_US
        true_us = floor + max(best_us - floor, 0.02 * floor) * rng.lognormvariate(0.15, 0.3)
        if rng.random() < 0.15:  # repeated samples: R8's bootstrap verdict
            return tuple(round(true_us * rng.gauss(1.0, 0.01), 3) for _ in range(5))
        return (round(true_us, 3),)


def impl_path(op: str) -> str:
    """The op's kernel file, relative to the root."""
    return f"custom/{op}/{op}_impl.py"


def write_campaign(root: Path, events: int, seed: int = 1, op: str = OP) -> int:
    """Write a campaign of about `events` events under `root` (custom/OP/); how many."""
    (root / "custom" / op).mkdir(parents=True)
    (root / impl_path(op)).write_bytes(IMPL)
    campaign = _Campaign(root, seed, events, op)
    campaign.setup()
    budget, end = events - campaign.events, campaign.events
    for number, (stage, share) in enumerate(STAGE_SHARES.items()):
        last = number == len(STAGE_SHARES) - 1
        end = events if last else end + int(budget * share)
        campaign.stage(stage, end, last)
    # The benches then try many changes in the open point; each is rolled back, and R7 would
    # close the point after a few without gain.
    campaign.run(cmd.SetPolicy(key="patience.incore", value=10**6, reason="bench (synthetic)"))
    OpLedger(root, op).render_memory()
    return campaign.events


def code_digest() -> str:
    """The cache key's code part: this module and the event schema (every module of
    `ledger/schema/`, where the payloads are defined) shape the bytes."""
    sha = hashlib.sha256(__version__.encode())
    import ledger.schema as schema

    schema_files = sorted(Path(schema.__file__).parent.glob("*.py"))
    for path in (Path(__file__), *schema_files):
        sha.update(path.read_bytes())
    return sha.hexdigest()[:12]


def cache_root(events: int, seed: int = 1, cache: Path | None = None) -> Path:
    """The cached root of a campaign of `events` events (in `cache`, by default CACHE),
    generated on a miss."""
    root = (cache or CACHE) / f"{events}ev-seed{seed}-{code_digest()}"
    if not (root / "done").exists():
        print(f"bench: generating a {events}-event campaign in {root}", file=sys.stderr)
        shutil.rmtree(root, ignore_errors=True)
        count = write_campaign(root, events, seed)
        (root / "done").write_text(json.dumps({"events": count}) + "\n")
    return root


def copy_of(events: int, into: Path, seed: int = 1, cache: Path | None = None) -> Path:
    """A fresh copy, in `into`, of the cached campaign of `events` events, to write to; a
    cache folder a command of older code left beside the ledger is not copied."""
    into.mkdir(parents=True, exist_ok=True)
    target = into / f"{events}ev-{len(list(into.iterdir()))}"
    ignore = shutil.ignore_patterns(".tune-ledger-cache")
    shutil.copytree(cache_root(events, seed, cache) / "custom", target / "custom", ignore=ignore)
    return target


def best_us(root: Path) -> float:
    """The best time (µs) of the campaign under `root`."""
    best = OpLedger(root, OP).load().state.best
    if best is None:
        raise RuntimeError(f"{ledger_file(root)}: the bench campaign has no best")
    return float(best.time_us)


def pending(state: Any) -> str:
    """The pending attempt's id (the step before started one)."""
    if state.pending is None:
        raise RuntimeError("the bench expected an attempt pending")
    return str(state.pending)


def ledger_file(root: Path) -> Path:
    """The bench op's ledger under `root`."""
    return root / "custom" / OP / "events.jsonl"


if __name__ == "__main__":
    for size in sys.argv[1:] or ["100", "10000"]:
        print(json.dumps({"events": int(size), "root": str(cache_root(int(size)))}))
