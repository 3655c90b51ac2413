"""Performance figures of one PyPTO run, simulated or on a device, read from its profile files.

Pure parsing and arithmetic: no pypto, no torch, no file system (callers pass text or decoded
JSON). Times are µs; `_simulate.swim.json` counts cycles of the simulated 1.8 GHz part
(µs = cycles / 1800).

Figures (tools/pypto/README.md, "Figures", says why each is defined so):
- per core, upstream's perf-analyzer formulas over bubble_analysis.log: aicore = work − wait;
  utilization % = aicore / (aicore + wait) × 100; bubble % = wait_schedule / (aicore +
  wait_schedule) × 100; a core with no time counts 0 % for both, as upstream does. Both lie
  in [0, 100] whenever 0 ≤ wait_schedule ≤ wait ≤ work (`inconsistent_cores` checks it; a
  log that breaks it, as stitched runs do, is recomputed from the swimlane).
- `util_pct` / `bubble_pct` (what the stop rule reads): the mean over every core of the core
  types the kernel used (AIV only for a vector kernel), idle cores of those types included.
- `*_all_aicores`: the mean over all AIC and AIV cores, as upstream's analyzer prints it;
  `*_cores_with_tasks`: over the cores that ran at least one task.
- `load_balance_pct`: mean / max of aicore time over the used types' cores (in [0, 100]);
  `load_balance_aic_pct_upstream`: upstream's (1 − std/mean) over AIC cores, floored at 0.
- time (primary, `max_work_time_us`): the largest Core Total Work Time over every core of
  the log, HUB included: the operator ends when its last task on any core ends.
  `max_work_time_aicore_us` reads AIC/AIV cores only, as upstream's analyzer and tuner do
  (smaller when a HUB control task finishes last); the stat report's Total Cycles / 1800
  (`total_cycles_us`, simulator only) is larger (start-up included).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
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


# ---------------------------------------------------------------- swimlanes


FAKE_CORE = "Fake Core"  # upstream's lane of the tasks the log lacks (placed by their edges)


@frozen
class LaneTask:
    """One task on a core's lane, in µs."""

    key: Hashable  # what the task graph names it by (e.g. (seqNo, taskId))
    start_us: float
    end_us: float


@frozen
class Lane:
    """One core's lane: its name as upstream writes it (`AIV_3`) and its tasks."""

    name: str
    tasks: tuple[LaneTask, ...]

    @property
    def kind(self) -> str:
        return core_kind(self.name)


def cores_from_lanes(lanes: Sequence[Lane], ready_us: Mapping[Hashable, float]) -> list[CoreTimes]:
    """The bubble log's per-core figures, computed from lanes as upstream's analyzer does.

    `ready_us[key]` is when a task's last predecessor ended (absent: no predecessor). As
    upstream (draw_swim_lane.py, analysis_wait_cycles): the clock starts at the earliest task
    of a real core; a task waits from its core's previous end, and the part of that wait after
    it was ready is schedule wait. Unlike upstream, waits are clamped: an overlap of two tasks
    on one lane is no wait (upstream adds a negative one), and the schedule wait lies within
    the wait (a task graph whose edges are not all real waits, as with stitching, gave
    upstream negative schedule waits). On consistent data the figures equal upstream's.
    """
    starts = [t.start_us for lane in lanes if lane.kind != FAKE_CORE for t in lane.tasks]
    start0 = min(starts, default=0.0)
    cores = []
    for lane in lanes:
        if lane.kind == FAKE_CORE:  # upstream skips fake tasks: an empty core
            cores.append(CoreTimes(lane.name, lane.kind, 0, len(lane.tasks), 0.0, 0.0, 0.0, 0.0))
            continue
        last_end, wait, wait_schedule = start0, 0.0, 0.0
        for task in sorted(lane.tasks, key=lambda t: (t.start_us, t.end_us)):
            gap = max(task.start_us - last_end, 0.0)
            schedule = task.start_us - max(last_end, ready_us.get(task.key, start0))
            wait += gap
            wait_schedule += min(max(schedule, 0.0), gap)
            last_end = max(last_end, task.end_us)
        cores.append(
            CoreTimes(
                name=lane.name,
                kind=lane.kind,
                tasks=len(lane.tasks),
                fake_tasks=0,
                work_us=last_end - start0,
                wait_us=wait,
                wait_schedule_us=wait_schedule,
                wait_predecessor_us=wait - wait_schedule,
            )
        )
    return cores


def lanes_span_us(lanes: Iterable[Lane]) -> float:
    """Latest task end minus earliest task start over the real cores' lanes, in µs."""
    tasks = [t for lane in lanes if lane.kind != FAKE_CORE for t in lane.tasks]
    if not tasks:
        raise ArtefactError("the swimlane has no task on any core")
    return max(t.end_us for t in tasks) - min(t.start_us for t in tasks)


def aicore_summary(lanes: Iterable[Lane]) -> tuple[float, float]:
    """(end-to-end µs, utilization %) as upstream's "AICORE Prof Summary" prints them.

    Over the AIC and AIV lanes (idle ones included): the span from their earliest task start
    to their latest end, and the lanes' busy time / (lanes × span) × 100. Upstream sums task
    durations; a lane's overlapping tasks (stitching) would then count twice and pass 100 %,
    so busy time here is the union of each lane's tasks (the same sum when none overlap).
    """
    compute = [lane for lane in lanes if lane.kind in COMPUTE_KINDS]
    tasks = [t for lane in compute for t in lane.tasks if t.end_us >= t.start_us]
    if not compute or not tasks:
        return 0.0, 0.0
    span = max(t.end_us for t in tasks) - min(t.start_us for t in tasks)
    busy = sum(_busy_us(lane.tasks) for lane in compute)
    return _clean(span), _clean(busy / (len(compute) * span) * 100.0 if span > 0 else 0.0)


def _busy_us(tasks: Iterable[LaneTask]) -> float:
    """The length of the union of the tasks' intervals."""
    busy, reach = 0.0, -math.inf
    for task in sorted(tasks, key=lambda t: t.start_us):
        if task.end_us > reach:
            busy += task.end_us - max(task.start_us, reach)
            reach = task.end_us
    return busy


# ---------------------------------------------------------------- _simulate.swim.json


def _task_key(task: Mapping[str, Any]) -> tuple[int, int]:
    return int(task.get("seqNo", 0)), int(task["taskId"])


def swim_lanes(swim: Sequence[Mapping[str, Any]]) -> list[Lane]:
    """The lanes of the simulator's `_simulate.swim.json` (cycles), in µs, named as upstream's
    analyzer names them (`<coreType>_<blockIdx + 1>`)."""
    return [
        Lane(
            name=f"{lane.get('coreType', 'Core')}_{int(lane['blockIdx']) + 1}",
            tasks=tuple(
                LaneTask(_task_key(t), t["execStart"] / CYCLES_PER_US, t["execEnd"] / CYCLES_PER_US)
                for t in lane.get("tasks", [])
            ),
        )
        for lane in sorted(swim, key=lambda lane: int(lane["blockIdx"]))
    ]


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
    settings) or wrote impossible waits (negative ones, seen with stitching). Work and total
    wait need only the swimlane; the schedule wait needs the task graph
    (`tmp_topo_json.json`): a task is ready when its last predecessor ended, and a
    predecessor missing from the swimlane (a control task) counts as ended when its earliest
    recorded successor started, or else when its last recorded predecessor ended.
    """
    lanes = swim_lanes(swim)
    start_of = {t.key: t.start_us for lane in lanes for t in lane.tasks}
    end_of = {t.key: t.end_us for lane in lanes for t in lane.tasks}
    start0 = min(start_of.values(), default=0.0)
    return cores_from_lanes(lanes, _ready_times(topo or [], start_of, end_of, start0))


def inconsistent_cores(cores: Sequence[CoreTimes]) -> list[str]:
    """Cores whose figures break 0 ≤ schedule wait ≤ total wait ≤ work (or are not finite)."""
    tolerance = 1e-9
    return [
        c.name
        for c in cores
        if not all(math.isfinite(v) for v in (c.work_us, c.wait_us, c.wait_schedule_us))
        or c.wait_schedule_us < -tolerance
        or c.wait_us < c.wait_schedule_us - tolerance
        or c.work_us < c.wait_us - tolerance
    ]


def _ready_times(
    topo: Iterable[Mapping[str, Any]],
    start_of: Mapping[Hashable, float],
    end_of: Mapping[Hashable, float],
    start0: float,
) -> dict[Hashable, float]:
    predecessors: dict[Hashable, list[Hashable]] = {}
    successors: dict[Hashable, list[Hashable]] = {}
    for node in topo:
        key = _task_key(node)
        for succ in node.get("successors", []):
            succ_key = (key[0], int(succ))
            successors.setdefault(key, []).append(succ_key)
            predecessors.setdefault(succ_key, []).append(key)

    def finished(key: Hashable) -> float:
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


def load_balance_pct(values: Sequence[float]) -> float:
    """mean / max × 100 (the load-balance efficiency of parallel-performance analysis): 100
    when every core works as long as the busiest, in [0, 100]; 100 with no work at all."""
    busiest = max(values, default=0.0)
    return _mean(values) / busiest * 100.0 if busiest > 0 else 100.0


def load_balance_std_pct(values: Sequence[float]) -> float:
    """Upstream's (1 − std/mean) × 100 (population std), floored at 0: once the spread exceeds
    the mean the formula goes negative (seen: −41.4), which no percentage can mean. 100 when
    the mean is 0, as upstream."""
    mean = _mean(values)
    if mean <= 0:
        return 100.0
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return max(0.0, (1.0 - std / mean) * 100.0)


def summarize(cores: Sequence[CoreTimes], total_cycles: float | None = None) -> dict[str, float]:
    """The run's figures: times in µs, percentages in [0, 100], counts (all numbers).

    `total_cycles` is the simulator's stat report figure (absent on a device).
    """
    compute = [c for c in cores if c.kind in COMPUTE_KINDS]
    if not compute:
        raise ArtefactError("no AIC or AIV core in the artefacts")
    used_kinds = sorted({c.kind for c in compute if c.tasks > 0})
    of_used = [c for c in compute if c.kind in used_kinds]
    with_tasks = [c for c in compute if c.tasks > 0]
    figures = {
        "max_work_time_us": max(c.work_us for c in cores),
        "max_work_time_aicore_us": max(c.work_us for c in compute),
        "util_pct": _mean([c.utilization_pct for c in of_used]),
        "bubble_pct": _mean([c.bubble_pct for c in of_used]),
        "util_pct_cores_with_tasks": _mean([c.utilization_pct for c in with_tasks]),
        "bubble_pct_cores_with_tasks": _mean([c.bubble_pct for c in with_tasks]),
        "util_pct_all_aicores": _mean([c.utilization_pct for c in compute]),
        "bubble_pct_all_aicores": _mean([c.bubble_pct for c in compute]),
        "load_balance_pct": load_balance_pct([c.aicore_us for c in of_used]),
        "load_balance_aic_pct_upstream": load_balance_std_pct(
            [c.aicore_us for c in compute if c.kind == "AIC"]
        ),
        "cores_aic": float(sum(1 for c in compute if c.kind == "AIC")),
        "cores_aiv": float(sum(1 for c in compute if c.kind == "AIV")),
        "cores_used_aic": float(sum(1 for c in with_tasks if c.kind == "AIC")),
        "cores_used_aiv": float(sum(1 for c in with_tasks if c.kind == "AIV")),
        "tasks": float(sum(c.tasks for c in compute)),
        "fake_tasks": float(sum(c.fake_tasks for c in cores)),
    }
    if total_cycles is not None:
        figures["total_cycles"] = float(total_cycles)
        figures["total_cycles_us"] = total_cycles / CYCLES_PER_US
    return {key: _clean(value) for key, value in figures.items()}


def _clean(value: float) -> float:
    """Round away float noise so equal runs give byte-equal documents (12 significant digits)."""
    if value == 0:
        return 0.0
    return float(f"{value:.12g}")
