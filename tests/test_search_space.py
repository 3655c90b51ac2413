"""The autopilot's search space comes from the op manifest: points, neighbours, defaults."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from rich.console import Console

from ledger.domain.keys import measured_key
from ledger.domain.manifest import Knob
from ledger.domain.state import Best, Measurement, RecordedManifest, State
from ledger.shell.manifest_file import declared, read_manifest
from tools import search_space
from tools.progress import Progress
from tools.pypto import phase

REPO = Path(__file__).resolve().parents[1]


def test_points_are_the_manifest_knobs_of_each_stage_in_order() -> None:
    """Each knob is a point of its own stage, in manifest order; no stage has another's."""
    space = search_space.load(REPO / "custom" / "matmul_bias_relu")
    assert space.points("frontend") == ("cube_tile_shape", "vec_tile_shape")
    assert space.points("swimlane") == ("stitch_function_max_num", "device_sched_mode")
    assert space.points("incore") == ("cube_nbuffer_setting", "vec_nbuffer_setting")
    assert space.spec.cube_m == 64 and space.spec.shape == [64, 256, 256]
    softmax = search_space.load(REPO / "custom" / "softmax")
    assert "stitch_function_num_initial" in softmax.points("swimlane")
    assert softmax.spec.cube_m is None


def test_neighbours_follow_the_knob_kind_or_domain() -> None:
    """A domain gives its other values; an int doubles and halves; a cube tile scales one axis."""
    domain = Knob(name="mode", stage="swimlane", kind="int", default=0, domain=(0, 1, 2))
    assert list(search_space._neighbours(domain, 1, [8], 64)) == [0, 2]
    number = Knob(name="stitch", stage="swimlane", kind="int", default=128)
    assert list(search_space._neighbours(number, 128, [8], 64)) == [256, 512, 64]
    cube = Knob(name="cube_tile_shape", stage="frontend", kind="json", default=None)
    grown = list(search_space._neighbours(cube, [[32, 32], [64, 64], [256, 256]], [8], 64))
    assert grown[0] == [[64, 64], [64, 64], [256, 256]]
    assert [[32, 32], [64, 64], [512, 512]] in grown
    assert [[16, 16], [64, 64], [256, 256]] in grown


def test_vec_tiles_grow_within_the_limit_and_the_shape() -> None:
    """A vec tile axis doubles up to min(dimension, limit), bigger tiles first."""
    vec = Knob(name="vec_tile_shape", stage="frontend", kind="tile", default=[1, 4])
    assert list(search_space._neighbours(vec, [1, 32], [2, 64], 64)) == [
        [2, 32],
        [1, 64],
        [1, 16],
    ]


def test_progress_prints_plain_lines_when_not_a_terminal(tmp_path: Path) -> None:
    """Piped output gets one line per attempt, with verdict and best so far, and no live line."""
    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=False, width=200))
    with progress.running("#1 frontend vec_tile_shape", tmp_path / "phase"):
        pass
    progress.attempt("#1 frontend vec_tile_shape: x=1", "adopt", None, 25.17, 25.17)
    assert out.getvalue() == (
        "  #1 frontend vec_tile_shape: x=1: adopt, 25.17 µs; best so far 25.17 µs\n"
    )


def test_the_live_line_shows_the_phase_a_run_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal the live line names the phase the run wrote to its progress file."""
    out = io.StringIO()
    progress = Progress(Console(file=out, force_terminal=True, width=200))
    phase_file = tmp_path / "phase"
    monkeypatch.setenv(phase.ENV, str(phase_file))
    with progress.running("#3 incore vec_nbuffer_setting", phase_file):
        phase.report("compile, simulate, verify")  # what the adapter's child process says
        deadline = time.monotonic() + 5
        while "compile, simulate, verify" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.1)
    assert "#3 incore vec_nbuffer_setting: compile, simulate, verify" in out.getvalue()


def test_a_mutation_measured_before_is_not_proposed_again() -> None:
    """The search space skips a config the ledger counts as measured (R9), filed with the
    manifest's knob defaults filled in: the best leaves the swimlane knobs at their defaults."""
    softmax = REPO / "custom" / "softmax"
    space = search_space.load(softmax)
    manifest = read_manifest(softmax)
    assert manifest is not None
    state = State()
    state.manifest = RecordedManifest(
        event="e", digest=manifest.digest, source="SPEC.md", declared=declared(manifest)
    )
    best = {"vec_tile_shape": [1, 16, 1, 64], "unroll_list": [1]}
    measured = Measurement(
        times_us=(25.0,), median_us=25.0, util_pct=None, bubble_pct=None, origin_level="measured"
    )
    state.best = Best(config=best, measurement=measured, attempt=None)
    state.measured_configs[measured_key(state, {**best, "stitch_function_max_num": 256})] = "a1"
    values = [value for _param, value in space.mutations(state, "stitch_function_max_num")]
    assert 256 not in values and 512 in values
