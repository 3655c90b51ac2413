"""Performance figures of one simulated PyPTO run, read from its artefact files.

Pure parsing and arithmetic: no pypto, no torch, no file system (callers pass text or
decoded JSON). Times in the bubble log are µs; times in `_simulate.swim.json` are cycles of
the simulated 1.8 GHz part (µs = cycles / 1800).

Figures (see tools/pypto/README.md for the reasons):
- per core (upstream perf-analyzer formulas): aicore = work − wait;
  utilization % = aicore / (aicore + wait) × 100; bubble % = wait_schedule / (aicore +
  wait_schedule) × 100; a core with no time counts 0 % for both, as upstream does.
- `util_pct` / `bubble_pct` (what the stop rule reads): the mean over every core of the core
  types the kernel used (AIV only for a vector kernel), idle cores of those types included.
- `*_upstream`: the mean over all AIC and AIV cores, as the upstream analyzer prints it.
- time (primary, `max_work_time_us`): the largest Core Total Work Time over every core of
  the log, HUB included: the operator ends when its last task on any core ends. Upstream's
  analyzer only reads AIC/AIV cores (`max_work_time_upstream_us`, smaller when a HUB control
  task finishes last); the stat report's Total Cycles / 1800 (`total_cycles_us`) is larger
  (start-up included). All three are kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

CYCLES_PER_US = 1800.0  # the simulated part runs at 1.8 GHz
COMPUTE_KINDS = ("AIC", "AIV")  # the core types upstream's analyzer averages over


class ArtefactError(ValueError):
    """An artefact file is missing a field or does not have the expected layout."""


@frozen
class CoreTimes:
    """One core's line in bubble_analysis.log (or the same figures derived from the swimlane)."""

    name: str
    kind: str
    tasks: int
    fake_tasks: int
    work_us: float
    wait_us: float
    wait_schedule_us: float
    wait_predecessor_us: float

    @property
    def aicore_us(self) -> float:
        return self.work_us - self.wait_us

    @property
    def utilization_pct(self) -> float:
        span = self.aicore_us + self.wait_us
        return self.aicore_us / span * 100.0 if span > 0 else 0.0

    @property
    def bubble_pct(self) -> float:
        span = self.aicore_us + self.wait_schedule_us
        return self.wait_schedule_us / span * 100.0 if span > 0 else 0.0


# ---------------------------------------------------------------- bubble_analysis.log

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# The header of a core; upstream's own regex misses the ", Fake Task: N" variant.
_HEADER = re.compile(
    r"^\[(?P<name>[^\]]+)\] Execute task num:\s*(?P<tasks>\d+)"
    r"(?:, Fake Task:\s*(?P<fake>\d+))?\s*$"
)
_FIELDS = (
    ("work_us", "Core Total Work Time"),
    ("wait_us", "Total Wait Time"),
    ("wait_schedule_us", "Wait Schedule Time"),
    ("wait_predecessor_us", "Wait Predecessor Time"),
)
_FIELD = re.compile(rf"^\s+(?P<label>[A-Za-z ]+):\s*(?P<value>{_NUMBER})(?:us)?\s*$")


def core_kind(name: str) -> str:
    """The core type of a core name: `AIV_25` → `AIV`, `Fake Core_0` → `Fake Core`."""
    return name.rsplit("_", 1)[0] if "_" in name else name


def parse_bubble_log(text: str) -> list[CoreTimes]:
    """Every core block of a bubble_analysis.log, in file order; strict about each block."""
    lines = text.splitlines()
    cores: list[CoreTimes] = []
    for index, line in enumerate(lines):
        header = _HEADER.match(line)
        if header is None:
            continue
        values: dict[str, float] = {}
        for offset, (key, label) in enumerate(_FIELDS, start=1):
            where = index + offset
            field = _FIELD.match(lines[where]) if where < len(lines) else None
            if field is None or field["label"].strip() != label:
                raise ArtefactError(
                    f"bubble_analysis.log:{where + 1}: expected '{label}: N' after the header "
                    f"of {header['name']} on line {index + 1}"
                )
            values[key] = float(field["value"])
        name = header["name"]
        cores.append(
            CoreTimes(
                name=name,
                kind=core_kind(name),
                tasks=int(header["tasks"]),
                fake_tasks=int(header["fake"] or 0),
                **values,
            )
        )
    if not cores:
        raise ArtefactError("bubble_analysis.log: no core blocks ('[NAME] Execute task num:')")
    return cores


# ---------------------------------------------------------------- _simulate.stat.report.txt

_STAT = re.compile(r"^\s*(?:\|--)?(?P<label>[A-Za-z][A-Za-z ]*?)\.*:\s*(?P<value>\d+(?:\.\d+)?)")


def parse_stat_report(text: str) -> dict[str, float]:
    """The first value of each labelled line of the stat report (`Total Cycles` is required)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = _STAT.match(line)
        if match is not None:
            found.setdefault(match["label"].strip(), float(match["value"]))
    if "Total Cycles" not in found:
        raise ArtefactError("_simulate.stat.report.txt: no 'Total Cycles' line")
    return found


# ---------------------------------------------------------------- _simulate.swim.json


def _task_key(task: Mapping[str, Any]) -> tuple[int, int]:
    return int(task.get("seqNo", 0)), int(task["taskId"])


def swim_span_us(swim: Sequence[Mapping[str, Any]]) -> float:
    """Latest task end minus earliest task start over all lanes, in µs (the cross-check)."""
    tasks = [t for lane in swim for t in lane.get("tasks", [])]
    if not tasks:
        raise ArtefactError("_simulate.swim.json: no task in any lane")
    span = max(t["execEnd"] for t in tasks) - min(t["execStart"] for t in tasks)
    return float(span) / CYCLES_PER_US


def cores_from_swim(
    swim: Sequence[Mapping[str, Any]], topo: Sequence[Mapping[str, Any]] | None
) -> list[CoreTimes]:
    """The bubble log's per-core figures recomputed from the swimlane and the task graph.

    Used when the simulator did not write bubble_analysis.log (it skips it for some stitch
    settings) or wrote impossible schedule waits (negative ones, seen with stitching). Work
    and total wait need only the swimlane; the schedule wait needs the task graph
    (`tmp_topo_json.json`): a task is ready when its last predecessor ended, and a
    predecessor missing from the swimlane (a control task) counts as ended when its earliest
    recorded successor started, or else when its last recorded predecessor ended.
    """
    start0 = min((t["execStart"] for lane in swim for t in lane.get("tasks", [])), default=0)
    end_of: dict[tuple[int, int], float] = {}
    start_of: dict[tuple[int, int], float] = {}
    for lane in swim:
        for task in lane.get("tasks", []):
            end_of[_task_key(task)] = float(task["execEnd"])
            start_of[_task_key(task)] = float(task["execStart"])
    ready = _ready_times(topo or [], start_of, end_of, float(start0))
    cores = []
    for lane in sorted(swim, key=lambda lane: int(lane["blockIdx"])):
        kind = str(lane.get("coreType", "Core"))
        last_end, wait, wait_schedule = float(start0), 0.0, 0.0
        tasks = sorted(lane.get("tasks", []), key=lambda t: (t["execStart"], t["execEnd"]))
        for task in tasks:
            start = float(task["execStart"])
            gap = start - last_end
            # Clamped to [0, gap]: with stitched functions the graph's edges do not all
            # describe real waits, and upstream's log then shows negative schedule waits.
            schedule = start - max(last_end, ready.get(_task_key(task), float(start0)))
            wait += gap
            wait_schedule += min(max(schedule, 0.0), max(gap, 0.0))
            last_end = float(task["execEnd"])
        cores.append(
            CoreTimes(
                name=f"{kind}_{int(lane['blockIdx']) + 1}",
                kind=kind,
                tasks=len(tasks),
                fake_tasks=0,
                work_us=(last_end - start0) / CYCLES_PER_US,
                wait_us=wait / CYCLES_PER_US,
                wait_schedule_us=wait_schedule / CYCLES_PER_US,
                wait_predecessor_us=(wait - wait_schedule) / CYCLES_PER_US,
            )
        )
    return cores


def inconsistent_cores(cores: Sequence[CoreTimes]) -> list[str]:
    """Cores whose schedule wait is negative or larger than their total wait."""
    return [
        c.name for c in cores if c.wait_schedule_us < -1e-9 or c.wait_schedule_us > c.wait_us + 1e-9
    ]


def _ready_times(
    topo: Iterable[Mapping[str, Any]],
    start_of: Mapping[tuple[int, int], float],
    end_of: Mapping[tuple[int, int], float],
    start0: float,
) -> dict[tuple[int, int], float]:
    predecessors: dict[tuple[int, int], list[tuple[int, int]]] = {}
    successors: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for node in topo:
        key = _task_key(node)
        for succ in node.get("successors", []):
            succ_key = (key[0], int(succ))
            successors.setdefault(key, []).append(succ_key)
            predecessors.setdefault(succ_key, []).append(key)

    def finished(key: tuple[int, int]) -> float:
        if key in end_of:
            return end_of[key]
        later = [start_of[s] for s in successors.get(key, []) if s in start_of]
        if later:
            return min(later)
        earlier = [end_of[p] for p in predecessors.get(key, []) if p in end_of]
        return max(earlier) if earlier else start0

    return {
        key: max([start0, *(finished(p) for p in preds)]) for key, preds in predecessors.items()
    }


# ---------------------------------------------------------------- aggregates


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _balance_pct(values: Sequence[float]) -> float:
    """(1 − std/mean) × 100 with the population std; 100 when the mean is 0 (upstream)."""
    mean = _mean(values)
    if mean <= 0:
        return 100.0
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return (1.0 - std / mean) * 100.0


def summarize(cores: Sequence[CoreTimes], total_cycles: float) -> dict[str, float]:
    """The run's figures: times in µs, percentages in [0, 100], counts (all numbers)."""
    compute = [c for c in cores if c.kind in COMPUTE_KINDS]
    if not compute:
        raise ArtefactError("no AIC or AIV core in the artefacts")
    used_kinds = sorted({c.kind for c in compute if c.tasks > 0})
    of_used = [c for c in compute if c.kind in used_kinds]
    active = [c for c in compute if c.tasks > 0]
    figures = {
        "max_work_time_us": max(c.work_us for c in cores),
        "max_work_time_upstream_us": max(c.work_us for c in compute),
        "total_cycles": float(total_cycles),
        "total_cycles_us": total_cycles / CYCLES_PER_US,
        "util_pct": _mean([c.utilization_pct for c in of_used]),
        "bubble_pct": _mean([c.bubble_pct for c in of_used]),
        "util_pct_active_cores": _mean([c.utilization_pct for c in active]),
        "bubble_pct_active_cores": _mean([c.bubble_pct for c in active]),
        "util_pct_upstream": _mean([c.utilization_pct for c in compute]),
        "bubble_pct_upstream": _mean([c.bubble_pct for c in compute]),
        "load_balance_pct": _balance_pct([c.aicore_us for c in of_used]),
        "load_balance_pct_upstream": _balance_pct(
            [c.aicore_us for c in compute if c.kind == "AIC"]
        ),
        "cores_aic": float(sum(1 for c in compute if c.kind == "AIC")),
        "cores_aiv": float(sum(1 for c in compute if c.kind == "AIV")),
        "cores_used_aic": float(sum(1 for c in active if c.kind == "AIC")),
        "cores_used_aiv": float(sum(1 for c in active if c.kind == "AIV")),
        "tasks": float(sum(c.tasks for c in compute)),
        "fake_tasks": float(sum(c.fake_tasks for c in cores)),
    }
    return {key: _clean(value) for key, value in figures.items()}


def _clean(value: float) -> float:
    """Round away float noise so equal runs give byte-equal documents (12 significant digits)."""
    if value == 0:
        return 0.0
    return float(f"{value:.12g}")
