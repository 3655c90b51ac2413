"""The bench's measuring primitives: timed calls and processes, sides timed in turn, and one
guardrail (a ratio of two sides measured in the same run, with its limit)."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# Processes run with compiled modules, as an installed tool has them: a shell that sets
# PYTHONDONTWRITEBYTECODE would make every side recompile its sources at every start.
PROCESS_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def summary(samples: Sequence[float]) -> dict[str, float]:
    """min / median / max of repeated samples."""
    return {
        "min": round(min(samples), 6),
        "median": round(statistics.median(samples), 6),
        "max": round(max(samples), 6),
    }


def timed(fn: Callable[[], Any]) -> float:
    """The wall time of one call, in seconds."""
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def process(argv: Sequence[str], env: dict[str, str] | None = None) -> float:
    """The wall time of one process, start to exit; it must succeed."""
    return process_times(argv, env)[0]


def process_times(argv: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """The wall time of one process, start to exit, and its CPU time (user + sys, which load
    from other jobs disturbs less); it must succeed."""
    started = time.perf_counter()
    child = subprocess.Popen(
        argv, env=env or PROCESS_ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    out = child.stdout.read() if child.stdout is not None else b""
    _pid, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {child.returncode}: {out[-400:]!r}")
    return elapsed, usage.ru_utime + usage.ru_stime


def alternate(*measures: Callable[[], float], repeats: int) -> list[list[float]]:
    """Each measure in turn, round after round, so that drift (other load on the machine)
    hits every side alike; the seconds each returned, in order."""
    samples: list[list[float]] = [[] for _ in measures]
    for _ in range(repeats):
        for measure, taken in zip(measures, samples, strict=True):
            taken.append(measure())
    return samples


@dataclass
class Guardrail:
    """One guardrail: `value` (the side under test) over `reference` (its anchor, measured in
    the same run), medians of their samples, against `limit` (`at_most` or at least)."""

    name: str
    what: str
    value_is: str
    reference_is: str
    value: list[float]
    reference: list[float]
    limit: float
    at_most: bool = True
    ratio_is: str = "value / reference"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        value, reference = statistics.median(self.value), statistics.median(self.reference)
        return value / reference if self.at_most else reference / value

    @property
    def passed(self) -> bool:
        return self.ratio <= self.limit if self.at_most else self.ratio >= self.limit

    def report(self) -> dict[str, Any]:
        """The guardrail as plain data: its ratio, limit, verdict and both sides' noise."""
        found = asdict(self)
        found["value"], found["reference"] = summary(self.value), summary(self.reference)
        found.update(ratio=round(self.ratio, 4), passed=self.passed, n=len(self.value))
        return found

    def line(self) -> str:
        """One line for a person: verdict, name, ratio against its limit, both medians."""
        sign = "≤" if self.at_most else "≥"
        value, reference = statistics.median(self.value), statistics.median(self.reference)
        cpu = self.extra.get("cpu_best_ratio")
        return (
            f"{'PASS' if self.passed else 'FAIL'}  {self.name:<34} {self.ratio:8.3f} {sign} "
            f"{self.limit:<5}  ({_seconds(value)} vs {_seconds(reference)}"
            + ("" if cpu is None else f"; CPU best of {len(self.value)}: {cpu:.3f}")
            + ")"
        )


def _seconds(value: float) -> str:
    return f"{value * 1e3:.2f} ms" if value < 1 else f"{value:.2f} s"
