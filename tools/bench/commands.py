"""The commands an agent runs from its shell, each as a whole `tune-ledger` process, at 100 and
10k events, beside `python -c "import click"` (the least a click program costs).

Guardrails: at 100 events a read ≤ 1.5× and a write ≤ 2.5× the click process (run right
after each command, so that load hits both alike); at 10k events every command ≤ 3× its own
time at 100 (a command replays the whole ledger, which is linear and fine at these sizes).
Each ledger is a copy of a synthetic campaign (tools/bench/ledgers.py) in the incore stage with
a point open, so the same commands do the same work at both sizes; a round runs every command
once, and the first round (compiled modules written, MEMORY.md rendered) is not counted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tools.bench.ledgers import OP, best_us, copy_of
from tools.bench.timing import Guardrail, process_times

CLICK = [sys.executable, "-c", "import click"]
READS = {"status": ("status", OP), "resume": ("resume", OP), "log": ("log", OP, "--limit", "5")}
# One round of writes: a note, then three changes of the best, each ended a different way
# (a rollback: verified slower than the best; a failure; an abandon).
WRITES = ("note", "try", "verify", "try", "fail", "try", "abandon")
READ_LIMIT, WRITE_LIMIT, GROWTH_LIMIT = 1.5, 2.5, 3.0


def cli(root: Path) -> list[str]:
    """`tune-ledger --root ROOT --json`, by this interpreter's console script when there is one."""
    script = Path(sys.executable).with_name("tune-ledger")
    program = [str(script)] if script.exists() else [sys.executable, "-m", "ledger"]
    return [*program, "--root", str(root), "--json"]


def _write_args(name: str, tag: int, best_us: float) -> tuple[str, ...]:
    if name == "note":
        return ("note", OP, "--text", f"bench note {tag}")
    if name == "try":  # a value never used before: never an R9 retry
        return ("try", OP, "--set", f"stitch_function_max_num={10**8 + tag}")
    if name == "verify":
        slower = f"{best_us * 1.5:.3f}us"
        return (
            "verify",
            OP,
            "pending",
            "--output",
            "y=true",
            "--layout-exit",
            "0",
            "--time",
            slower,
        )
    if name == "fail":
        return ("fail", OP, "pending", "--category", "runtime", "--detail", f"bench {tag}")
    return ("abandon", OP, "pending", "--reason", f"bench {tag}")


def _rounds(
    root: Path, repeats: int, log: Callable[[str], None]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Seconds per process of every command, and of the click process run after each: wall
    times, and CPU times."""
    best, prefix = best_us(root), cli(root)
    samples: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    for number in range(repeats + 1):
        argvs = [(name, args) for name, args in READS.items()]
        argvs += [(name, _write_args(name, number * 10 + n, best)) for n, name in enumerate(WRITES)]
        for name, args in argvs:
            took, took_cpu = process_times([*prefix, *args])
            click, click_cpu = process_times(CLICK)
            if number:
                samples.setdefault(name, []).append(took)
                samples.setdefault("click", []).append(click)
                cpu.setdefault(name, []).append(took_cpu)
                cpu.setdefault("click", []).append(click_cpu)
        log(f"  round {number} of {repeats} done")
    return samples, cpu


def _best_ratio(cpu: dict[str, list[float]], name: str) -> float:
    """The command's least CPU time over the click process's least, in the same rounds."""
    return round(min(cpu[name]) / min(cpu["click"]), 4)


def bench_commands(
    scratch: Path, sizes: tuple[int, int], repeats: int, log: Callable[[str], None]
) -> list[Guardrail]:
    """Every counted command at both sizes against click, and its growth."""
    small, large = sizes
    at: dict[int, dict[str, list[float]]] = {}
    cpu_at: dict[int, dict[str, list[float]]] = {}
    for events in sizes:
        log(f"commands as processes, {events} events")
        at[events], cpu_at[events] = _rounds(copy_of(events, scratch), repeats, log)
    found = []
    for name in [*READS, *dict.fromkeys(WRITES)]:
        limit = READ_LIMIT if name in READS else WRITE_LIMIT
        found.append(Guardrail(
            name=f"{name}_vs_click",
            what=f"a `{name}` process at {small} events against a process importing click",
            value_is=f"tune-ledger --json {name} ..., start to exit",
            reference_is='python -c "import click", run after each command',
            value=at[small][name], reference=at[small]["click"], limit=limit,
            # CPU time (user + sys), best of the rounds: what load from other jobs moves least
            extra={"cpu_best_ratio": _best_ratio(cpu_at[small], name)},
        ))  # fmt: skip
        found.append(Guardrail(
            name=f"{name}_growth",
            what=f"a `{name}` process at {large} events against the same at {small}",
            value_is=f"tune-ledger --json {name} ... at {large} events",
            reference_is=f"the same command at {small} events",
            value=at[large][name], reference=at[small][name], limit=GROWTH_LIMIT,
        ))  # fmt: skip
    return found
