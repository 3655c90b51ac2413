"""Benchmark: every command an agent runs, as a whole process, beside `python -c "import click"`.

Issue 19, goals 1 and 4: each read command within 1.5x and each writing command within 2x the
bare interpreter with click imported, on a 100-event ledger; each within 1.5x of its own
100-event time at 100k events; the peak RSS of a writing command at 100k events within 2x of
the same at 100 events. Processes of one round alternate with the click process, so drift hits
both sides alike. The peak RSS is the child's own (`os.wait4`'s resource usage).

Counted: the reads an agent runs between steps (`status`, `resume`, `log`, `priors`) and the
writes of a search step (`note`, `candidate`, `verify` with one reported sample: the threshold
verdict; with samples on both sides: the bootstrap verdict, which imports numpy and says so,
`fail`, `abandon`). Beside them, the design's floor: a process that imports click, attrs and
cattrs (required dependencies) and defines the event schema's classes, as every writing command
must; its ratio to click is the least any command of this design can show. Not counted, by
design: `audit` and `check` verify the whole ledger (their
job is O(events), and they never read the disposable snapshot), `verify --run` waits for the
verifier, `report` writes a report about every attempt.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tools.bench import phases, prepare
from tools.bench.campaign import OP
from tools.bench.processes import PROCESS_ENV, cli_command
from tools.bench.timing import figure, rounded, summary

CLICK = [sys.executable, "-c", "import click"]
# The floor of the design (issue 19): the least any process of it can cost. attrs, cattrs and
# click are required dependencies and every command imports them; every writing command also
# defines the event schema's classes (it builds a payload), so that is in the floor too. The
# bare imports and the imports with the schema are timed apart, each as many times a round as
# the reads.
FLOORS: dict[str, list[str]] = {
    "imports": [sys.executable, "-c", "import click, attrs, cattrs"],
    "imports_and_schema": [
        sys.executable,
        "-c",
        "import click, attrs, cattrs, ledger.schema.events",
    ],
}

READ_GOAL = 1.5
WRITE_GOAL = 2.0
GROWTH_GOAL = 1.5
RSS_GOAL = 2.0

# The reads, with their arguments after the op.
READS: dict[str, tuple[str, ...]] = {
    "status": ("status", OP),
    "resume": ("resume", OP),
    "log": ("log", OP, "--limit", "5"),
    # A config stage named: the bench ledgers end in the algorithm stage, where `priors`
    # without one has no keys to propose values for.
    "priors": ("priors", OP, "--stage", "incore"),
}

# One round of writes, in order, from a campaign with no pending attempt back to the same, in
# the algorithm stage at every size (tools/bench/prepare.py): `start` is `try --algorithm`;
# `verify` reports one sample, a threshold verdict; `verify_samples` three, a bootstrap verdict
# against the prepared best's samples, which imports numpy. Every verify is slower than the
# best, so each is a rollback at every size.
SAMPLES = "verify_samples"
WRITES = ("note", "start", "verify", "start", "fail", "start", "abandon", "start", SAMPLES)


# Where the time of one write, the read that misses its goal and the cheapest read goes, by
# layer (tools/bench/phases.py), on the small ledger once the rounds are done.
PHASES: dict[str, tuple[str, ...]] = {
    "note": ("note", OP, "--text", "bench phases"),
    "priors": READS["priors"],
    "status": READS["status"],
}


def _write_args(name: str, tag: str, best_us: float) -> tuple[str, ...]:
    """The arguments after `--json` of one writing command of the round."""
    if name == "note":
        return ("note", OP, "--text", f"bench note {tag}")
    if name == "abandon":
        return ("abandon", OP, "pending", "--reason", f"bench {tag}")
    if name == "fail":
        return ("fail", OP, "pending", "--category", "runtime", "--detail", f"bench {tag}")
    if name == "start":
        return ("try", OP, "--algorithm", prepare.idea(tag))
    slower = (1.5, 1.49, 1.51) if name == SAMPLES else (1.5,)
    times = [arg for f in slower for arg in ("--time", f"{best_us * f:.3f}us")]
    return ("verify", OP, "pending", "--output", "y=true", "--layout-exit", "0", *times)


def _run_json(cli: Sequence[str]) -> prepare.Run:
    """`prepare`'s way to run one command: its JSON output, an error included."""

    def run(root: Path, *argv: str) -> dict[str, Any]:
        del root  # `cli` names it
        done = subprocess.run([*cli, *argv], capture_output=True, check=False, env=PROCESS_ENV)
        return dict(json.loads(done.stdout or b"{}"))

    return run


# The processes are started by a small helper process, not by this one: a child's peak RSS
# (`ru_maxrss`) also counts the memory of the process it was forked from, up to its exec, and
# the bench harness holds 100k-event ledgers by then (every child then read ~295 MiB). The
# helper is a bare interpreter (~10 MiB, below any command's own peak); it times each child
# from its start to its exit, as `run_process` did in this process.
_SPAWNER = """
import json, os, subprocess, sys, time
for line in sys.stdin:
    argv, env = json.loads(line)
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    errors = child.stderr.read()
    _pid, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.stderr.close()
    child.returncode = code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    out = [elapsed, usage.ru_maxrss, cpu, code, errors.decode(errors="replace")[-500:]]
    print(json.dumps(out), flush=True)
"""


class Spawner:
    """A bare interpreter that runs the measured processes and reports on each."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SPAWNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=PROCESS_ENV,
        )

    def run(self, argv: Sequence[str]) -> tuple[float, int, float]:
        """Wall time (s), peak RSS (KiB) and CPU time (user + system, s) of one process,
        start to exit; it must succeed."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps([list(argv), PROCESS_ENV]) + "\n")
        self.process.stdin.flush()
        elapsed, peak, cpu, code, errors = json.loads(self.process.stdout.readline())
        if code != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {code}: {errors}")
        return float(elapsed), int(peak), float(cpu)

    def close(self) -> None:
        """End the helper (its input closed, it exits)."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def _copy_root(source: Path, scratch: Path, name: str) -> Path:
    """A writable copy of a cached bench root (its `custom/`), without any cache folder."""
    root = scratch / name
    shutil.copytree(source / "custom", root / "custom")
    shutil.rmtree(root / "custom" / OP / ".tune-ledger-cache", ignore_errors=True)
    return root


# Samples of one ledger size: per command name (and "click"), wall s, CPU s and peak RSS KiB.
Samples = dict[str, dict[str, list[float]]]


def _measure_size(
    root: Path, repeats: int, log: Callable[[str], None], spawner: Spawner
) -> Samples:
    """Wall time, CPU time and peak RSS of every counted command on one ledger (prepared the
    same way at every size), each followed by a click process."""
    cli = [*cli_command(), "--root", str(root), "--json"]
    samples: Samples = {}
    run_process = spawner.run

    def keep(name: str, argv: Sequence[str]) -> None:
        wall, peak, cpu = run_process(argv)
        taken = samples.setdefault(name, {"wall": [], "cpu": [], "rss": []})
        taken["wall"].append(wall)
        taken["cpu"].append(cpu)
        taken["rss"].append(float(peak))

    best_us = prepare.prepared(_run_json(cli), root)
    # Round 0 is not measured: compiled modules written, caches as a campaign leaves them.
    for round_no in range(repeats + 1):
        commands = [(name, READS[name]) for name in READS]
        commands += [
            (name, _write_args(name, f"{round_no}-{step}", best_us))
            for step, name in enumerate(WRITES)
        ]
        for name, args in commands:
            if round_no:
                keep(name, [*cli, *args])
                keep("click", CLICK)
            else:
                run_process([*cli, *args])
        for _ in READS:
            for name, argv in FLOORS.items():
                if round_no:
                    keep(f"floor_{name}", argv)
                else:
                    run_process(argv)
        log(f"  round {round_no} of {repeats} done")
    return samples


def bench_commands(
    small: Path, big: Path, repeats: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """Every counted command at 100 and 100k events beside `python -c "import click"`."""
    spawner = Spawner()
    try:
        with tempfile.TemporaryDirectory(prefix="tune-ledger-commands-") as tmp:
            scratch = Path(tmp)
            sides = {}
            for label, source in (("small", small), ("big", big)):
                root = _copy_root(source, scratch, label)
                log(f"commands on {label} ledger ({source.name})")
                sides[label] = _measure_size(root, repeats, log, spawner)
            log("where the time goes (python -X importtime), on the small ledger")
            where = phases.breakdown(scratch / "small", PHASES, repeats)
    finally:
        spawner.close()
    at_small, at_big = sides["small"], sides["big"]

    def both(name: str) -> dict[str, list[float]]:
        return {kind: at_small[name][kind] + at_big[name][kind] for kind in ("wall", "cpu")}

    click = both("click")
    floor = both("floor_imports_and_schema")
    figures: dict[str, Any] = {}
    for name in [*READS, *dict.fromkeys(WRITES)]:
        goal = READ_GOAL if name in READS else WRITE_GOAL
        figures[name] = _figures(name, goal, at_small[name], at_big[name], click, floor)
    figures["click"] = {kind: summary(click[kind]) for kind in ("wall", "cpu")}
    figures["floor"] = {
        name: {
            "argv": argv[1:],
            "wall": summary(both(f"floor_{name}")["wall"]),
            "cpu": summary(both(f"floor_{name}")["cpu"]),
            "ratio_vs_click": rounded(min(both(f"floor_{name}")["wall"]) / min(click["wall"])),
        }
        for name, argv in FLOORS.items()
    }
    figures["phases"] = where
    return figures


def _figures(
    name: str,
    goal: float,
    small: dict[str, list[float]],
    big: dict[str, list[float]],
    click: dict[str, list[float]],
    floor: dict[str, list[float]],
) -> dict[str, Any]:
    """One command's figures: against click (with the design's floor beside it), its growth,
    and (writes) its peak RSS. Values are the best (least disturbed) wall time of N; CPU
    times are shown beside them, since a shared machine's load lands on wall time first."""
    value, reference, big_value = min(small["wall"]), min(click["wall"]), min(big["wall"])
    least = min(floor["wall"])
    cpu = {
        "small": summary(small["cpu"]),
        "big": summary(big["cpu"]),
        "click": summary(click["cpu"]),
        "ratio_vs_click": rounded(min(small["cpu"]) / min(click["cpu"])),
        "ratio_growth": rounded(min(big["cpu"]) / min(small["cpu"])),
    }
    found = {
        "vs_click": figure(
            what=f"tune-ledger --json {name} on the small ledger, whole process (best of N)",
            value=value,
            reference=reference,
            unit="s",
            ratio=value / reference,
            ratio_is=f"{name}_time / import_click_time",
            goal=f"≤ {goal}",
            met=value / reference <= goal,
            reference_is='python -c "import click" (same interpreter, alternated)',
            noise={"value": summary(small["wall"]), "reference": summary(click["wall"])},
            cpu_s=cpu,
            floor={
                "value": rounded(least),
                "is": "python -c 'import click, attrs, cattrs, ledger.schema.events' (best of N)",
                "ratio": rounded(least / reference),
                "ratio_is": "floor_time / import_click_time: the least ratio of this design",
                "command_over_floor": rounded(value / least),
            },
        ),
        "growth": figure(
            what=f"tune-ledger --json {name} on the big ledger vs the small one (best of N)",
            value=big_value,
            reference=value,
            unit="s",
            ratio=big_value / value,
            ratio_is=f"{name}_time(big) / {name}_time(small)",
            goal=f"≤ {GROWTH_GOAL}",
            met=big_value / value <= GROWTH_GOAL,
            reference_is="the same command on the small ledger",
            noise={"value": summary(big["wall"]), "reference": summary(small["wall"])},
        ),
    }
    if name not in READS:
        peak_big, peak_small = max(big["rss"]), max(small["rss"])
        found["peak_rss"] = figure(
            what=f"peak RSS of {name} on the big ledger vs the small one (largest of N)",
            value=peak_big / 1024,
            reference=peak_small / 1024,
            unit="MiB",
            ratio=peak_big / peak_small,
            ratio_is="peak_rss(big) / peak_rss(small)",
            goal=f"≤ {RSS_GOAL}",
            met=peak_big / peak_small <= RSS_GOAL,
            reference_is="the same command on the small ledger",
            noise={
                "value": summary([r / 1024 for r in big["rss"]]),
                "reference": summary([r / 1024 for r in small["rss"]]),
            },
        )
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m tools.bench.commands`: this figure alone, as JSON on stdout."""
    import argparse
    import json

    from tools.bench import ledgers

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    def progress(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    small, _ = ledgers.cached_ledger(args.small, log=progress)
    big, _ = ledgers.cached_ledger(args.big, log=progress)
    report = bench_commands(small, big, args.repeats, progress)
    print(json.dumps(report, indent=1, sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    main()
