"""Reading one run folder, simulated or from a device, into samples, figures and file digests.

A simulated run folder is what pypto writes under TILE_FWK_OUTPUT_DIR: `output_<timestamp>_.../`
with `CostModelSimulationOutput/` (stat report, swimlane, bubble log, merged swimlane) and, with
pass-verify on, `verify_<timestamp>/verify_result_brief.csv`.

A device run folder is what the child writes for an NPU run (`device_runs/`): `device.json`
(what the child learnt of the device), one folder per run of the kernel (`warmup`, `run_1`,
`run_2`, ...) holding that run's profile files and its stdout, and `msprof/` when the run was
wrapped in msprof. A folder pypto wrote on a device by itself (`output_<timestamp>/` with
`bubble_analysis.log` at its top) reads as one run. Only the files parsed here are digested.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attrs import frozen

from . import device_profile, metrics
from .metrics import ArtefactError
from .numerics import VerifyRow, parse_verify_csv

SIM = "CostModelSimulationOutput"
DEVICE_RUNS = "device_runs"  # the child's folder of an NPU run's samples
DEVICE_JSON = "device.json"
WARMUP = "warmup"
RUN_PREFIX = "run_"
STDOUT = "stdout.log"  # a device run's stdout, captured at the file descriptor
BUBBLE_LOG, MERGED_SWIMLANE = "bubble_analysis.log", "merged_swimlane.json"
L1_PROF_DATA, PIPE_USAGE = "tilefwk_L1_prof_data.json", "pipe_usage.csv"
PROFILE_FILES = (BUBBLE_LOG, MERGED_SWIMLANE, L1_PROF_DATA, PIPE_USAGE)
CROSSCHECK_TOLERANCE_US = 0.01  # bubble-log and swimlane spans must agree to 18 cycles


@frozen
class RunArtefacts:
    """The parsed content of one run folder."""

    folder: Path
    run_mode: str  # "sim" or "npu"
    times_us: list[float]  # samples of max_work_time_us: one simulated, one per warm run
    metrics: dict[str, float]  # the figures of one run (on a device: the median sample's)
    metrics_source: str
    crosscheck: dict[str, Any]
    verify_rows: list[VerifyRow] | None
    digests: dict[str, str]
    device: dict[str, Any] | None  # device.json of a device run folder, when there is one


def find_run_folder(directory: Path) -> Path:
    """The run folder in or at `directory`: a device run folder, an output_* folder (or its
    SIM folder), or the parent of exactly one of them."""
    directory = directory.resolve()
    if directory.name == SIM:
        directory = directory.parent
    if _is_run_folder(directory):
        return directory
    runs = sorted(
        p for p in (*directory.glob("output_*"), directory / DEVICE_RUNS) if _is_run_folder(p)
    )
    if len(runs) == 1:
        return runs[0]
    if not runs:
        raise ArtefactError(
            f"{directory}: no run folder ({SIM}/, {DEVICE_RUNS}/, or a device's "
            f"{BUBBLE_LOG} / {MERGED_SWIMLANE}) in it"
        )
    raise ArtefactError(
        f"{directory}: {len(runs)} run folders, name one of them: "
        + ", ".join(p.name for p in runs)
    )


def _is_run_folder(path: Path) -> bool:
    return (path / SIM).is_dir() or bool(_device_runs(path)) or _is_device_run(path)


def _is_device_run(path: Path) -> bool:
    return (path / BUBBLE_LOG).is_file() or (path / MERGED_SWIMLANE).is_file()


def _device_runs(folder: Path) -> list[Path]:
    """The warm runs of a device run folder, in order (`run_1`, `run_2`, ...)."""
    runs = [p for p in folder.glob(f"{RUN_PREFIX}*") if p.is_dir() and _is_run_index(p.name)]
    return sorted(runs, key=lambda p: int(p.name.removeprefix(RUN_PREFIX)))


def _is_run_index(name: str) -> bool:
    return name.removeprefix(RUN_PREFIX).isdigit()


class _Reader:
    """Reads files of one run folder, keeping each one's sha256 by its path in the folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.digests: dict[str, str] = {}

    def bytes(self, path: Path) -> bytes:
        data = path.read_bytes()
        self.digests[path.relative_to(self.folder).as_posix()] = hashlib.sha256(data).hexdigest()
        return data

    def text(self, path: Path) -> str:
        return self.bytes(path).decode("utf-8", errors="replace")

    def json(self, path: Path) -> Any:
        try:
            return json.loads(self.bytes(path))
        except ValueError as e:
            raise ArtefactError(f"{path}: not valid JSON ({e})") from e


def read_run_folder(folder: Path) -> RunArtefacts:
    """Parse a run folder (simulated or from a device)."""
    if (folder / SIM).is_dir():
        return _read_sim(folder)
    return _read_device(folder)


# ---------------------------------------------------------------- simulated


def _read_sim(folder: Path) -> RunArtefacts:
    """Metrics from the bubble log (else the swimlane), pass-verify's verdicts."""
    reader = _Reader(folder)
    sim = folder / SIM
    stat_path, swim_path = sim / "_simulate.stat.report.txt", sim / "_simulate.swim.json"
    for needed in (stat_path, swim_path):
        if not needed.is_file():
            raise ArtefactError(f"{folder}: no {needed.relative_to(folder)}")
    total_cycles = metrics.parse_stat_report(reader.text(stat_path))["Total Cycles"]
    swim = reader.json(swim_path)
    bubble_path, topo_path = sim / BUBBLE_LOG, folder / "tmp_topo_json.json"
    cores = metrics.parse_bubble_log(reader.text(bubble_path)) if bubble_path.is_file() else []
    bad = metrics.inconsistent_cores(cores)
    source = BUBBLE_LOG
    if not cores or bad:
        # The simulator skips its bubble analysis for some stitch settings, and with stitched
        # functions it writes negative schedule waits: recompute with the same formulas.
        topo = reader.json(topo_path) if topo_path.is_file() else None
        cores = metrics.cores_from_swim(swim, topo)
        source = "_simulate.swim.json" + (" + tmp_topo_json.json" if topo else "")
        source += _impossible(bad)
    figures = metrics.summarize(cores, total_cycles)
    merged_path = sim / MERGED_SWIMLANE
    if merged_path.is_file():
        trace = device_profile.parse_merged_swimlane(reader.json(merged_path))
        _add_summary(figures, trace, None)
    csvs = sorted(folder.glob("verify_*/verify_result_brief.csv"))
    return RunArtefacts(
        folder=folder,
        run_mode="sim",
        times_us=[figures["max_work_time_us"]],
        metrics=figures,
        metrics_source=source,
        crosscheck=_crosscheck(metrics.swim_span_us(swim), figures),
        verify_rows=parse_verify_csv(reader.text(csvs[-1])) if csvs else None,
        digests=reader.digests,
        device=None,
    )


def _impossible(bad: list[str]) -> str:
    if not bad:
        return ""
    return f" ({BUBBLE_LOG} has impossible waits on {len(bad)} cores, e.g. {bad[0]})"


def _crosscheck(span_us: float, figures: dict[str, float]) -> dict[str, Any]:
    diff = abs(span_us - figures["max_work_time_us"])
    return {
        "swim_span_us": float(f"{span_us:.12g}"),
        "abs_diff_us": float(f"{diff:.6g}"),
        "ok": diff <= CROSSCHECK_TOLERANCE_US,
    }


def _add_summary(
    figures: dict[str, float],
    trace: device_profile.Trace | None,
    printed: device_profile.ProfSummary | None,
) -> None:
    """Upstream's "AICORE Prof Summary" figures: as printed when the run's stdout has them,
    else computed from the merged swimlane with the same formula."""
    if printed is not None:
        figures["aicore_summary_e2e_us"] = printed.e2e_us
        figures["aicore_summary_util_pct"] = min(100.0, max(0.0, printed.util_pct))
    elif trace is not None:
        e2e, util = metrics.aicore_summary(trace.lanes)
        figures["aicore_summary_e2e_us"], figures["aicore_summary_util_pct"] = e2e, util


# ---------------------------------------------------------------- on a device


def _read_device(folder: Path) -> RunArtefacts:
    """Samples of a device run folder: one per warm run (or the folder itself as one run)."""
    reader = _Reader(folder)
    runs = _device_runs(folder)
    if not runs:
        if not _is_device_run(folder):
            raise ArtefactError(f"{folder}: neither a simulated nor a device run folder")
        runs = [folder]
    parsed = [_read_device_run(run, reader) for run in runs]
    times = [figures["max_work_time_us"] for figures, _, _ in parsed]
    # The figures of one real run, the median sample's (the ledger compares medians).
    middle = sorted(range(len(times)), key=lambda i: (times[i], i))[(len(times) - 1) // 2]
    figures, source, crosscheck = parsed[middle]
    figures = dict(figures)
    figures["time_min_us"] = min(times)
    warmup = folder / WARMUP
    if warmup.is_dir() and _is_device_run(warmup):
        figures["warmup_time_us"] = _read_device_run(warmup, reader)[0]["max_work_time_us"]
    figures.update(_msprof_figures(folder, reader))
    where = runs[middle].relative_to(folder).as_posix()
    if len(runs) > 1:
        source = f"{where}/{source} (the median of {len(runs)} warm runs)"
    device = _device_record(folder / DEVICE_JSON)
    return RunArtefacts(
        folder=folder,
        run_mode="npu",
        times_us=times,
        metrics=figures,
        metrics_source=source,
        crosscheck=crosscheck,
        verify_rows=None,
        digests=reader.digests,
        device=device,
    )


def _device_record(path: Path) -> dict[str, Any] | None:
    """The run's description of its device (not a measured file: not digested)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _read_device_run(run: Path, reader: _Reader) -> tuple[dict[str, float], str, dict[str, Any]]:
    """(figures, where the per-core figures came from, cross-check) of one run on a device."""

    def optional(name: str, parse: Callable[[Path], Any]) -> Any:
        path = run / name
        return parse(path) if path.is_file() else None

    trace = optional(
        MERGED_SWIMLANE, lambda p: device_profile.parse_merged_swimlane(reader.json(p))
    )
    cores = optional(BUBBLE_LOG, lambda p: metrics.parse_bubble_log(reader.text(p))) or []
    bad = metrics.inconsistent_cores(cores)
    source = BUBBLE_LOG
    if not cores or bad:
        if trace is None:
            missing = "impossible waits" if bad else "no per-core figures"
            raise ArtefactError(
                f"{run}: {BUBBLE_LOG} has {missing} and there is no {MERGED_SWIMLANE} to "
                "recompute them from (did pypto's draw_swim_lane.py run? it needs python3, "
                "program.json and dyn_topo.txt)"
            )
        # Stitched runs log negative waits: recompute from the swimlane, same formulas.
        cores = metrics.cores_from_lanes(trace.lanes, trace.ready_us)
        source = MERGED_SWIMLANE + _impossible(bad)
    figures = metrics.summarize(cores)
    printed = optional(STDOUT, lambda p: device_profile.parse_prof_summary(reader.text(p)))
    _add_summary(figures, trace, printed)
    pipes = optional(PIPE_USAGE, lambda p: device_profile.parse_pipe_usage(reader.text(p)))
    for pipe, usage in (pipes or {}).items():
        figures[f"pipe_usage_pct_{pipe}"] = usage
    crosscheck: dict[str, Any] = {"ok": None}
    if trace is not None:
        crosscheck = _crosscheck(metrics.lanes_span_us(trace.lanes), figures)
    lanes = optional(L1_PROF_DATA, lambda p: device_profile.parse_l1_prof_data(reader.json(p)))
    if lanes is not None:
        # The raw dump and the analysis of it must count the same AIC/AIV tasks.
        dumped = lanes.tasks.get("AIC", 0) + lanes.tasks.get("AIV", 0)
        crosscheck["l1_aicore_tasks"] = dumped
        if dumped != figures["tasks"]:
            crosscheck["ok"] = False
    return figures, source, crosscheck


def _msprof_figures(folder: Path, reader: _Reader) -> dict[str, float]:
    """msprof's own timing of the kernel's launches, when the run was wrapped in msprof."""
    durations: list[float] = []
    for path in sorted(folder.rglob("PROF_*/mindstudio_profiler_output/op_summary_*.csv")):
        durations += device_profile.parse_op_summary(reader.text(path))
    if not durations:
        return {}
    warm = durations[1:] or durations  # the first launch is the warm-up
    return {
        "msprof_task_duration_us": float(statistics.median(warm)),
        "msprof_launches": float(len(durations)),
    }
