"""The PyPTO adapter end to end: real compiles and simulations of the softmax op (slow)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not an installed package
from tools.pypto import artefacts, device, device_profile, metrics, runner  # noqa: E402
from tools.pypto.spec import load_spec  # noqa: E402

pytestmark = pytest.mark.slow
OP = ROOT / "custom" / "softmax"
DETERMINISTIC = (
    "CostModelSimulationOutput/_simulate.stat.report.txt",
    "CostModelSimulationOutput/_simulate.swim.json",
    "CostModelSimulationOutput/bubble_analysis.log",
)


@pytest.fixture(scope="module", autouse=True)
def _needs_pypto() -> None:
    pytest.importorskip("pypto")
    pytest.importorskip("torch")


def measure(config: dict[str, Any], op_dir: Path = OP, **options: Any) -> tuple[dict, int]:
    return runner.measure(runner.Request(op_dir=op_dir, config=config, **options))


def cli(*args: str) -> tuple[dict, int]:
    done = subprocess.run(
        [sys.executable, "-m", "tools.pypto.run", *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), done.returncode


def test_configs_give_different_times_and_a_rerun_gives_the_same() -> None:
    """Three tiles, three times; the same config twice, the same figures and artefacts."""
    docs = {}
    for tile, passes in (
        ([1, 32, 1, 256], "all"),
        ([1, 16, 1, 64], "graph"),
        ([1, 16, 1, 128], "graph"),
    ):
        doc, code = measure({"vec_tile_shape": tile}, verify_passes=passes)
        assert code == 0, doc["failure"]
        assert doc["failure"] is None and doc["layout_exit"] == 0
        assert [o["all_close"] for o in doc["outputs"]] == [True]
        assert doc["outputs"][0]["max_diff"] < 1e-5
        assert doc["crosscheck"]["ok"] and doc["metrics_source"] == "bubble_analysis.log"
        assert doc["time_us"] < doc["metrics"]["total_cycles_us"]
        assert 0 <= doc["util_pct"] <= 100 and 0 <= doc["bubble_pct"] <= 100
        docs[tuple(tile)] = doc
    times = {tile: doc["time_us"] for tile, doc in docs.items()}
    assert len(set(times.values())) == 3, times
    # The same figures as PYPTO.md reports for this shape and tile.
    assert docs[(1, 32, 1, 256)]["metrics"]["total_cycles"] == 16546
    again, code = cli("--op-dir", str(OP), "--config", '{"vec_tile_shape": [1, 32, 1, 256]}')
    first = docs[(1, 32, 1, 256)]
    assert code == 0
    for key in ("time_us", "times_us", "util_pct", "bubble_pct", "metrics", "outputs"):
        assert again[key] == first[key], key
    for name in DETERMINISTIC:
        assert again["artefacts"][name] == first["artefacts"][name], name


def test_infeasible_config_is_a_compile_failure() -> None:
    """The config PYPTO.md names fails in the compiler's passes: category compile."""
    doc, code = measure({"vec_tile_shape": [4, 32, 1, 256], "unroll_list": [4, 1]})
    assert code == runner.EXIT_FAILED
    assert doc["failure"]["category"] == "compile"
    assert "Run pass failed" in doc["failure"]["detail"]
    assert doc["time_us"] is None and doc["outputs"] == []


def test_wrong_golden_is_an_accuracy_failure(tmp_path: Path) -> None:
    """A golden scaled by 1.5 is caught by our compare and by pass-verify's own verdict."""
    op_dir = tmp_path / "softmax"
    shutil.copytree(OP, op_dir)
    golden = op_dir / "softmax_golden.py"
    golden.write_text(
        golden.read_text().replace("torch.softmax(x, dim=-1)]", "torch.softmax(x, dim=-1) * 1.5]")
    )
    doc, code = measure({"vec_tile_shape": [1, 32, 1, 256]}, op_dir=op_dir, verify_passes="graph")
    assert code == runner.EXIT_FAILED
    assert doc["failure"]["category"] == "accuracy"
    (out,) = doc["outputs"]
    assert out["all_close"] is False and out["max_diff"] > 0.001
    assert "tensor_graph differs from the golden" in out["reason"]
    assert doc["time_us"] > 0  # the time is still measured


def test_metrics_parsed_from_real_artefacts(tmp_path: Path) -> None:
    """Kept artefacts re-parse to the same figures; bubble log and swimlane agree per core."""
    doc, code = measure(
        {"vec_tile_shape": [1, 8, 1, 64]}, numerics=False, keep_dir=tmp_path / "kept"
    )
    assert code == 0 and doc["numerics"].startswith("skipped")
    folder = Path(doc["artefact_dir"])
    parsed, code = cli("--perf-dir", str(folder), "--op-dir", str(OP))
    assert code == 0
    assert parsed["time_us"] == doc["time_us"] and parsed["metrics"] == doc["metrics"]
    assert parsed["artefacts"] == doc["artefacts"]
    sim = folder / artefacts.SIM
    from_log = metrics.parse_bubble_log((sim / "bubble_analysis.log").read_text())
    from_swim = metrics.cores_from_swim(
        json.loads((sim / "_simulate.swim.json").read_text()),
        json.loads((folder / "tmp_topo_json.json").read_text()),
    )
    by_name = {c.name: c for c in from_swim}
    for core in from_log:
        if core.kind in ("AIC", "AIV", "HUB"):
            twin = by_name[core.name]
            assert twin.work_us == pytest.approx(core.work_us, abs=1e-9)
            assert twin.wait_us == pytest.approx(core.wait_us, abs=1e-9)
            assert twin.wait_schedule_us == pytest.approx(core.wait_schedule_us, abs=1e-9)
    stat = metrics.parse_stat_report((sim / "_simulate.stat.report.txt").read_text())
    assert stat["Total Cycles"] == 81481  # PYPTO.md's figure for this tile
    assert doc["time_us"] == pytest.approx(43.37, abs=0.01)
    assert doc["metrics"]["max_work_time_aicore_us"] < doc["time_us"]
    assert doc["device"] == {
        "run_mode": "sim",
        "soc": device.SIM_SOC,
        "id": None,
        "cann": None,
        "driver": None,
    }
    assert doc["tool"] == "pypto-sim" and doc["times_us"] == [doc["time_us"]]


def test_swimlane_and_summary_match_upstreams_own_analysis(tmp_path: Path) -> None:
    """On a real run with dependencies (matmul on AIC, bias and relu on AIV), the per-core
    figures recomputed from merged_swimlane.json equal upstream's bubble_analysis.log, and
    the "AICORE Prof Summary" recomputed equals the block upstream printed."""
    op = ROOT / "custom" / "matmul_bias_relu"
    folder = tmp_path / "out"
    folder.mkdir()
    spec = load_spec(op)
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps(
            {
                "op_dir": str(op),
                "op_name": spec.op_name,
                "shape": spec.p0_shape,
                "dtype": spec.dtype,
                "config": {},
                "seed": 0,
                "numerics": False,
                "rtol": spec.rtol,
                "atol": spec.atol,
                "result_path": str(tmp_path / "result.json"),
            }
        )
    )
    env = runner.child_environment(os.environ, output_dir=folder, home=tmp_path, run_mode="sim")
    done = subprocess.run(
        [sys.executable, "-m", "tools.pypto.child", str(request)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    printed = device_profile.parse_prof_summary(done.stdout)
    (sim,) = folder.glob(f"output_*/{artefacts.SIM}")
    trace = device_profile.parse_merged_swimlane(
        json.loads((sim / "merged_swimlane.json").read_text())
    )
    assert trace.ready_us, "the matmul's vector tasks wait for its cube tasks"
    from_trace = {c.name: c for c in metrics.cores_from_lanes(trace.lanes, trace.ready_us)}
    from_log = metrics.parse_bubble_log((sim / "bubble_analysis.log").read_text())
    assert len(from_log) == len(from_trace)
    for core in from_log:
        twin = from_trace[core.name]
        assert (twin.tasks, twin.fake_tasks) == (core.tasks, core.fake_tasks)
        assert twin.work_us == pytest.approx(core.work_us, abs=1e-9)
        assert twin.wait_us == pytest.approx(core.wait_us, abs=1e-9)
        assert twin.wait_schedule_us == pytest.approx(core.wait_schedule_us, abs=1e-9)
    e2e, util = metrics.aicore_summary(trace.lanes)
    assert printed is not None
    assert (round(e2e, 2), round(util, 2)) == (printed.e2e_us, printed.util_pct)


def test_missing_bubble_log_falls_back_to_the_swimlane() -> None:
    """stitch_function_max_num 1: no bubble_analysis.log, figures from the swimlane."""
    doc, code = measure(
        {"vec_tile_shape": [1, 8, 1, 64], "stitch_function_max_num": 1}, numerics=False
    )
    assert code == 0
    assert doc["metrics_source"].startswith("_simulate.swim.json")
    assert doc["metrics"]["total_cycles"] == 767608  # 9.4× the default stitch (PYPTO.md)
    assert doc["crosscheck"]["ok"]
    assert 0 <= doc["bubble_pct"] <= 100


def test_wall_time_limit_is_a_timeout() -> None:
    """A run over its wall-time limit is killed and classified as a timeout."""
    doc, code = measure({}, limits=runner.Limits(wall_s=2.0, memory_mb=6144.0))
    assert code == runner.EXIT_FAILED and doc["failure"]["category"] == "timeout"
    assert doc["run"]["wall_s"] < 10


def test_unknown_knob_is_a_usage_error() -> None:
    """A misspelt config key is bad input (exit 2), not a measured failure."""
    doc, code = cli("--op-dir", str(OP), "--config", '{"vec_tile": [1, 8, 1, 64]}')
    assert code == runner.EXIT_USAGE and "unknown config keys ['vec_tile']" in doc["error"]
