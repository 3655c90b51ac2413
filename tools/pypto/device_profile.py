"""The profile files a PyPTO run writes on an Ascend device, parsed into lanes and figures.

Pure: callers pass text or decoded JSON. With `runtime_debug_mode: 1`, pypto dumps the
device's per-core task times (`tilefwk_L1_prof_data.json`), then runs its own
`draw_swim_lane.py` on them, which writes `bubble_analysis.log` (parsed by metrics.py),
`merged_swimlane.json` and, when asked, `pipe_usage.csv`, and prints the "AICORE Prof
Summary" block to the process's stdout. msprof, when the run is wrapped in it, writes
`PROF_*/mindstudio_profiler_output/op_summary_*.csv`. The simulator writes the same
`merged_swimlane.json` and prints the same block (from the same script).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from .metrics import ArtefactError, Lane, LaneTask, core_kind

# ---------------------------------------------------------------- merged_swimlane.json

# upstream draws a dependency as a flow: its start 0.0001 µs before the predecessor's end
# (inside that task), its finish at the successor's start.
_TIME_TOLERANCE_US = 1e-6


@frozen
class Trace:
    """A merged swimlane: each core's lane, and the dependencies between its tasks."""

    lanes: tuple[Lane, ...]
    ready_us: dict[Any, float]  # task key -> when its last predecessor ended


def parse_merged_swimlane(trace: Mapping[str, Any]) -> Trace:
    """Lanes and task readiness of a Chrome trace written by upstream's draw_swim_lane.py.

    `ph: "M"` thread_name events name the lanes (`AIC_1`, `AIV_25`; a core whose tasks overlap
    has a second lane of the same name); `ph: "X"` events are tasks (`ts`, `dur` in µs);
    `ph: "s"` / `"f"` pairs of one `id` are dependencies, the `s` inside the predecessor, the
    `f` at the successor's start, each on its task's lane.
    """
    events = trace.get("traceEvents") if isinstance(trace, Mapping) else None
    if not isinstance(events, list):
        raise ArtefactError("merged_swimlane.json: no traceEvents list")
    names: dict[tuple[Any, Any], str] = {}
    for event in events:
        if event.get("ph") == "M" and event.get("name") == "thread_name":
            names[(event.get("pid"), event.get("tid"))] = str(event["args"]["name"])
    by_thread: dict[tuple[Any, Any], list[LaneTask]] = {}
    try:
        for event in events:
            if event.get("ph") != "X":
                continue
            thread = (event.get("pid"), event.get("tid"))
            if thread not in names:
                raise ArtefactError(
                    f"merged_swimlane.json: task event {event.get('id')} on an unnamed lane"
                )
            start = float(event["ts"])
            by_thread.setdefault(thread, []).append(
                LaneTask(_event_key(event), start, start + float(event["dur"]))
            )
    except (KeyError, TypeError, ValueError) as e:
        raise ArtefactError(f"merged_swimlane.json: a task event lacks ts/dur ({e})") from e
    lanes: dict[str, list[LaneTask]] = {}
    for thread, name in sorted(names.items(), key=lambda item: _lane_order(item[1])):
        lanes.setdefault(name, []).extend(by_thread.get(thread, []))
    ready = _ready_from_flows(events, by_thread)
    return Trace(
        lanes=tuple(Lane(name, tuple(tasks)) for name, tasks in lanes.items()), ready_us=ready
    )


def _event_key(event: Mapping[str, Any]) -> Any:
    """A task event's identity within the trace (upstream numbers its events)."""
    if "id" in event:
        return ("event", event["id"])
    return ("at", event.get("pid"), event.get("tid"), event["ts"])


def _lane_order(name: str) -> tuple[int, str]:
    tail = name.rsplit("_", 1)[-1]
    return (int(tail) if tail.isdigit() else -1, name)


def _ready_from_flows(
    events: Sequence[Mapping[str, Any]], by_thread: Mapping[tuple[Any, Any], list[LaneTask]]
) -> dict[Any, float]:
    starts: dict[Any, Mapping[str, Any]] = {}
    finishes: dict[Any, Mapping[str, Any]] = {}
    for event in events:
        if event.get("ph") == "s":
            starts[event.get("id")] = event
        elif event.get("ph") == "f":
            finishes[event.get("id")] = event
    ready: dict[Any, float] = {}
    for flow, start in starts.items():
        finish = finishes.get(flow)
        if finish is None:
            continue
        source = _task_at(by_thread, start, lambda t, ts: t.start_us <= ts <= t.end_us)
        target = _task_at(
            by_thread, finish, lambda t, ts: abs(t.start_us - ts) <= _TIME_TOLERANCE_US
        )
        if source is None or target is None:
            raise ArtefactError(
                f"merged_swimlane.json: dependency {flow} does not meet a task at both ends"
            )
        ready[target.key] = max(ready.get(target.key, source.end_us), source.end_us)
    return ready


def _task_at(
    by_thread: Mapping[tuple[Any, Any], list[LaneTask]], event: Mapping[str, Any], fits: Any
) -> LaneTask | None:
    ts = float(event["ts"])
    for task in by_thread.get((event.get("pid"), event.get("tid")), []):
        if fits(task, ts):
            return task
    return None


# ---------------------------------------------------------------- the AICORE Prof Summary


@frozen
class ProfSummary:
    """The block upstream prints after a profiled run (two decimals each)."""

    e2e_us: float
    util_pct: float


_SUMMARY = re.compile(
    r"-+ AICORE Prof Summary -+\s*\n\s*AICore End-to-End Time:\s*(?P<e2e>[-\d.]+)\s*\n"
    r"\s*AICore Utilization:\s*(?P<util>[-\d.]+)%"
)


def parse_prof_summary(text: str) -> ProfSummary | None:
    """The last "AICORE Prof Summary" block of a run's stdout, or None when there is none."""
    found = list(_SUMMARY.finditer(text))
    if not found:
        return None
    last = found[-1]
    return ProfSummary(e2e_us=float(last["e2e"]), util_pct=float(last["util"]))


# ---------------------------------------------------------------- tilefwk_L1_prof_data.json


@frozen
class DeviceLanes:
    """What the device's raw per-core dump says: its cores and tasks by core type."""

    cores: dict[str, int]  # core type (AIC, AIV, AI-CPU) -> lanes
    tasks: dict[str, int]  # core type -> tasks executed


def parse_l1_prof_data(data: Any) -> DeviceLanes:
    """The lanes of `tilefwk_L1_prof_data.json`: a list of {blockIdx, coreType, tasks:
    [{taskId, execStart, execEnd, ...}]} (device clock ticks, not µs)."""
    if not isinstance(data, list):
        raise ArtefactError("tilefwk_L1_prof_data.json: not a list of cores")
    cores: dict[str, int] = {}
    tasks: dict[str, int] = {}
    for index, lane in enumerate(data):
        if not isinstance(lane, Mapping) or "coreType" not in lane:
            raise ArtefactError(f"tilefwk_L1_prof_data.json: core {index} has no coreType")
        kind = core_kind(f"{lane['coreType']}_0")
        lane_tasks = lane.get("tasks") or []
        for task in lane_tasks:
            if not {"execStart", "execEnd"} <= set(task):
                raise ArtefactError(
                    f"tilefwk_L1_prof_data.json: a task of core {index} lacks execStart/execEnd"
                )
        cores[kind] = cores.get(kind, 0) + 1
        tasks[kind] = tasks.get(kind, 0) + len(lane_tasks)
    return DeviceLanes(cores=cores, tasks=tasks)


# ---------------------------------------------------------------- pipe_usage.csv


def parse_pipe_usage(text: str) -> dict[str, float]:
    """Each pipe's average usage % from the "Total Pipe Usage" table of pipe_usage.csv
    (`Pipe, AverageTime, TotalExecuteTime, AverageUsage` rows like `CUBE, 1.5, 6.0, 25.0%`).

    Clamped into [0, 100]: upstream divides one pipe's summed time by a core count, and a
    pipe counted twice (overlapping intervals) could pass 100.
    """
    lines = [line.strip() for line in text.splitlines()]
    try:
        header = next(
            i for i, line in enumerate(lines) if line.replace(" ", "").startswith("Pipe,")
        )
    except StopIteration:
        raise ArtefactError("pipe_usage.csv: no 'Pipe, AverageTime, ...' header") from None
    usage: dict[str, float] = {}
    for line in lines[header + 1 :]:
        if not line:
            break
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) < 4:
            raise ArtefactError(f"pipe_usage.csv: short row {line!r}")
        try:
            usage[cells[0]] = min(100.0, max(0.0, float(cells[3].rstrip("%"))))
        except ValueError as e:
            raise ArtefactError(f"pipe_usage.csv: bad usage in {line!r}") from e
    return usage


# ---------------------------------------------------------------- msprof's op_summary_*.csv


def parse_op_summary(text: str, op_marker: str = "PYPTO") -> list[float]:
    """The `Task Duration(us)` of each launch of a PyPTO kernel in an msprof op summary, in
    launch order (rows whose `Op Name` contains `op_marker`)."""
    reader = csv.DictReader(io.StringIO(text))
    fields = [f.strip() for f in reader.fieldnames or []]
    if "Op Name" not in fields or "Task Duration(us)" not in fields:
        raise ArtefactError("op_summary csv: no 'Op Name' and 'Task Duration(us)' columns")
    durations = []
    for row in reader:
        clean = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        if op_marker in clean["Op Name"]:
            try:
                durations.append(float(clean["Task Duration(us)"]))
            except ValueError as e:
                raise ArtefactError(
                    f"op_summary csv: bad Task Duration(us) for {clean['Op Name']!r}"
                ) from e
    return durations
