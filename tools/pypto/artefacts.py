"""Reading one simulated run's artefact folder into figures, evidence and file digests.

A run folder is what pypto writes under TILE_FWK_OUTPUT_DIR: `output_<timestamp>_.../` with
`CostModelSimulationOutput/` (stat report, swimlane, bubble log) and, with pass-verify on,
`verify_<timestamp>/verify_result_brief.csv`. Only the files parsed here are digested.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from attrs import frozen

from . import metrics
from .metrics import ArtefactError
from .numerics import VerifyRow, parse_verify_csv

SIM = "CostModelSimulationOutput"
CROSSCHECK_TOLERANCE_US = 0.01  # bubble-log and swimlane spans must agree to 18 cycles


@frozen
class RunArtefacts:
    """The parsed content of one run folder."""

    folder: Path
    metrics: dict[str, float]
    metrics_source: str
    crosscheck: dict[str, Any]
    verify_rows: list[VerifyRow] | None
    digests: dict[str, str]


def find_run_folder(directory: Path) -> Path:
    """The run folder in or at `directory` (an output_* folder, its parent, or its SIM folder)."""
    directory = directory.resolve()
    if directory.name == SIM:
        directory = directory.parent
    if (directory / SIM).is_dir():
        return directory
    runs = sorted(p for p in directory.glob("output_*") if (p / SIM).is_dir())
    if len(runs) == 1:
        return runs[0]
    if not runs:
        raise ArtefactError(f"{directory}: no run folder with {SIM}/ in it")
    raise ArtefactError(
        f"{directory}: {len(runs)} run folders, name one of them: "
        + ", ".join(p.name for p in runs)
    )


def read_run_folder(folder: Path) -> RunArtefacts:
    """Parse a run folder: metrics from the bubble log (else the swimlane), verify verdicts."""
    sim = folder / SIM
    digests: dict[str, str] = {}

    def read(path: Path) -> bytes:
        data = path.read_bytes()
        digests[path.relative_to(folder).as_posix()] = hashlib.sha256(data).hexdigest()
        return data

    stat_path, swim_path = sim / "_simulate.stat.report.txt", sim / "_simulate.swim.json"
    for needed in (stat_path, swim_path):
        if not needed.is_file():
            raise ArtefactError(f"{folder}: no {needed.relative_to(folder)}")
    total_cycles = metrics.parse_stat_report(read(stat_path).decode())["Total Cycles"]
    swim = _json(read(swim_path), swim_path)
    bubble_path, topo_path = sim / "bubble_analysis.log", folder / "tmp_topo_json.json"
    cores = metrics.parse_bubble_log(read(bubble_path).decode()) if bubble_path.is_file() else []
    bad = metrics.inconsistent_cores(cores)
    source = "bubble_analysis.log"
    if not cores or bad:
        # The simulator skips its bubble analysis for some stitch settings, and with stitched
        # functions it writes negative schedule waits: recompute with the same formulas.
        topo = _json(read(topo_path), topo_path) if topo_path.is_file() else None
        cores = metrics.cores_from_swim(swim, topo)
        source = "_simulate.swim.json" + (" + tmp_topo_json.json" if topo else "")
        if bad:
            source += (
                f" (bubble_analysis.log has impossible schedule waits on {len(bad)} "
                f"cores, e.g. {bad[0]})"
            )
    figures = metrics.summarize(cores, total_cycles)
    span = metrics.swim_span_us(swim)
    diff = abs(span - figures["max_work_time_us"])
    crosscheck = {
        "swim_span_us": float(f"{span:.12g}"),
        "abs_diff_us": float(f"{diff:.6g}"),
        "ok": diff <= CROSSCHECK_TOLERANCE_US,
    }
    csvs = sorted(folder.glob("verify_*/verify_result_brief.csv"))
    rows = parse_verify_csv(read(csvs[-1]).decode()) if csvs else None
    return RunArtefacts(
        folder=folder,
        metrics=figures,
        metrics_source=source,
        crosscheck=crosscheck,
        verify_rows=rows,
        digests=digests,
    )


def _json(data: bytes, path: Path) -> Any:
    try:
        return json.loads(data)
    except ValueError as e:
        raise ArtefactError(f"{path}: not valid JSON ({e})") from e
