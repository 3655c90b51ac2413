"""The device's profile files (tests/data/pypto/npu/, hand-written from upstream's formats) parse
to the figures computed by hand here, with upstream's perf-analyzer formulas."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/ is not installed
from tools.pypto import artefacts, device_profile, metrics

NPU = Path(__file__).parent / "data" / "pypto" / "npu"
ONE_RUN, STITCHED, RUNS = NPU / "one_run", NPU / "stitched", NPU / "device_runs"


def _trace(folder: Path) -> device_profile.Trace:
    return device_profile.parse_merged_swimlane(
        json.loads((folder / "merged_swimlane.json").read_text())
    )


# The one_run fixture, in µs from the first task (1000.0 in the files):
#   AIC_1: A 0–4         AIC_2: B 1–4
#   AIV_3: C 5–7 (after A), D 7–9 (after B)     AIV_4: E 4–8 (after A and B)
#   AIV_5: idle          AIV_6: F 4.5–6 (after B)          AI-CPU_7, Fake Core_0: idle
# Per core (upstream: work = last end − first start of all; wait = gaps on the core;
# schedule wait = start − max(core free, last predecessor's end)):
HAND = {  # name: (tasks, work, wait, wait_schedule)
    "Fake Core_0": (0, 0.0, 0.0, 0.0),
    "AIC_1": (1, 4.0, 0.0, 0.0),
    "AIC_2": (1, 4.0, 1.0, 1.0),  # B starts 1 after the clock, nothing to wait for
    "AIV_3": (2, 9.0, 5.0, 1.0),  # C: waits 5, of which 1 after A ended at 4; D: none
    "AIV_4": (1, 8.0, 4.0, 0.0),  # E: waits 4, ready at 4 (A and B end)
    "AIV_5": (0, 0.0, 0.0, 0.0),
    "AIV_6": (1, 6.0, 4.5, 0.5),  # F: waits 4.5, ready at 4 (B's end)
    "AI-CPU_7": (0, 0.0, 0.0, 0.0),
}


def test_bubble_log_and_merged_swimlane_give_the_hand_computed_cores() -> None:
    """The log as upstream writes it, and the swimlane recomputed with its formulas, agree."""
    from_log = metrics.parse_bubble_log((ONE_RUN / "bubble_analysis.log").read_text())
    trace = _trace(ONE_RUN)
    from_trace = metrics.cores_from_lanes(trace.lanes, trace.ready_us)
    for cores in (from_log, from_trace):
        got = {c.name: (c.tasks, c.work_us, c.wait_us, c.wait_schedule_us) for c in cores}
        assert got == HAND
    # Five dependencies: C after A, D after B, E after A and B, F after B (ends at 1004.0).
    assert sorted(trace.ready_us.values()) == [1004.0] * 4
    assert metrics.lanes_span_us(trace.lanes) == 9.0


def test_figures_of_one_device_run_computed_by_hand() -> None:
    """Every figure of the document, from upstream's per-core formulas and our aggregates."""
    run = artefacts.read_run_folder(artefacts.find_run_folder(ONE_RUN))
    figures = run.metrics
    assert run.run_mode == "npu" and run.times_us == [9.0]
    assert figures["max_work_time_us"] == figures["max_work_time_aicore_us"] == 9.0
    # util = (work − wait) / work; bubble = ws / (work − wait + ws); idle cores 0 %.
    util = {"AIC_1": 100.0, "AIC_2": 75.0, "AIV_3": 400 / 9, "AIV_4": 50.0, "AIV_5": 0.0}
    util["AIV_6"] = 25.0
    bubble = {"AIC_1": 0.0, "AIC_2": 25.0, "AIV_3": 20.0, "AIV_4": 0.0, "AIV_5": 0.0}
    bubble["AIV_6"] = 25.0  # 0.5 / (1.5 + 0.5)
    # Both AIC and AIV ran tasks: the used types are all six compute cores.
    assert figures["util_pct"] == pytest.approx(sum(util.values()) / 6)  # 49.07
    assert figures["bubble_pct"] == pytest.approx(70 / 6)  # 11.67
    assert figures["util_pct_all_aicores"] == pytest.approx(sum(util.values()) / 6)
    assert figures["util_pct_cores_with_tasks"] == pytest.approx(sum(util.values()) / 5)
    assert figures["bubble_pct_cores_with_tasks"] == pytest.approx(70 / 5)
    # aicore times 4, 3, 4, 4, 0, 1.5: mean 2.75, busiest 4.
    assert figures["load_balance_pct"] == pytest.approx(2.75 / 4 * 100)
    # Upstream's (1 − std/mean) over AIC: 4 and 3, mean 3.5, std 0.5.
    assert figures["load_balance_aic_pct_upstream"] == pytest.approx((1 - 0.5 / 3.5) * 100)
    # The printed summary (stdout.log) wins over recomputing it: 2 decimals as printed.
    assert figures["aicore_summary_e2e_us"] == 9.0
    assert figures["aicore_summary_util_pct"] == 30.56
    assert figures["pipe_usage_pct_CUBE"] == 38.89 and figures["pipe_usage_pct_MTE1"] == 5.556
    assert (figures["cores_aic"], figures["cores_aiv"], figures["tasks"]) == (2, 4, 6)
    assert run.crosscheck == {
        "swim_span_us": 9.0,
        "abs_diff_us": 0.0,
        "ok": True,
        "l1_aicore_tasks": 6,
    }
    assert sorted(run.digests) == [
        "bubble_analysis.log",
        "merged_swimlane.json",
        "pipe_usage.csv",
        "stdout.log",
        "tilefwk_L1_prof_data.json",
    ]


def test_aicore_summary_formula_matches_the_printed_block() -> None:
    """Upstream's summary: busy time of AIC/AIV lanes / (lanes × span): 16.5 / (6 × 9)."""
    e2e, util = metrics.aicore_summary(_trace(ONE_RUN).lanes)
    assert (e2e, util) == (9.0, pytest.approx(16.5 / 54 * 100))
    printed = device_profile.parse_prof_summary((ONE_RUN / "stdout.log").read_text())
    assert printed == device_profile.ProfSummary(e2e_us=9.0, util_pct=30.56)
    assert round(util, 2) == printed.util_pct
    assert device_profile.parse_prof_summary("no summary here") is None


def test_l1_prof_data_lists_the_device_lanes() -> None:
    """The raw dump: its lanes by coreType (AI-CPU included) and their tasks."""
    lanes = device_profile.parse_l1_prof_data(
        json.loads((ONE_RUN / "tilefwk_L1_prof_data.json").read_text())
    )
    assert lanes.cores == {"AIC": 2, "AIV": 4, "AI-CPU": 1}
    assert lanes.tasks == {"AIC": 2, "AIV": 4, "AI-CPU": 0}
    with pytest.raises(metrics.ArtefactError, match="lacks execStart"):
        device_profile.parse_l1_prof_data([{"coreType": "AIV", "tasks": [{"taskId": 1}]}])


def test_pipe_usage_and_op_summary() -> None:
    """pipe_usage.csv's Total Pipe Usage table; msprof's PyPTO launches in order."""
    usage = device_profile.parse_pipe_usage((ONE_RUN / "pipe_usage.csv").read_text())
    assert usage == {
        "CUBE": 38.89,
        "VECTOR_ALU": 22.22,
        "MTE_IN": 11.11,
        "MTE1": 5.556,
        "MTE_OUT": 10.0,
    }
    assert device_profile.parse_pipe_usage("Pipe, AverageTime, T, U\nCUBE, 9, 8, 112.5%\n") == {
        "CUBE": 100.0  # clamped: a percentage of the run's time cannot pass 100
    }
    (csv_path,) = RUNS.rglob("op_summary_*.csv")
    assert device_profile.parse_op_summary(csv_path.read_text()) == [14.2, 11.0, 10.4, 10.9]


def test_stitched_log_with_negative_waits_is_recomputed_from_the_swimlane() -> None:
    """Upstream's formulas on its own log give 120 % and 400 %; ours recompute, in range."""
    cores = {
        c.name: c for c in metrics.parse_bubble_log((STITCHED / "bubble_analysis.log").read_text())
    }
    # AIV_1 ran P 0–3 and Q 2–5 (overlapping): upstream adds a wait of −1.
    assert cores["AIV_1"].utilization_pct == pytest.approx(6 / 5 * 100)  # (5 − −1) / 5
    # AIV_2's R (1–4) "waits" for Q (ends at 5): a schedule wait of −4, and the bubble
    # formula ws / (aicore + ws) gives −4 / (3 − 4) = 400 %.
    aiv2 = cores["AIV_2"]
    assert aiv2.wait_schedule_us / (aiv2.aicore_us + aiv2.wait_schedule_us) * 100 == 400.0
    assert metrics.inconsistent_cores(list(cores.values())) == ["AIV_1", "AIV_2"]
    run = artefacts.read_run_folder(STITCHED)
    assert run.metrics_source.startswith("merged_swimlane.json (bubble_analysis.log has")
    # Recomputed: the overlap is no wait (AIV_1: work 5, wait 0); R waited 1, none of it for
    # a predecessor that had not ended (schedule wait clamped to 0): AIV_2 util 3/4.
    assert run.metrics["util_pct"] == pytest.approx((100 + 75) / 2)  # AIV only
    assert run.metrics["bubble_pct"] == 0.0
    assert run.metrics["util_pct_all_aicores"] == pytest.approx(175 / 3)
    assert run.metrics["load_balance_pct"] == pytest.approx(4 / 5 * 100)  # aicore 5 and 3
    assert run.times_us == [5.0]


def test_device_run_folder_gives_one_sample_per_warm_run() -> None:
    """Samples of run_1..run_3; figures of the median run; the warm-up apart; msprof's too."""
    run = artefacts.read_run_folder(artefacts.find_run_folder(RUNS))
    assert run.times_us == [9.5, 9.0, 8.8]
    assert run.metrics_source == "run_2/bubble_analysis.log (the median of 3 warm runs)"
    assert run.metrics["util_pct"] == pytest.approx((100 + 75 + 400 / 9 + 50 + 0 + 25) / 6)
    assert run.metrics["time_min_us"] == 8.8 and run.metrics["warmup_time_us"] == 12.0
    # Launches 14.2 (the warm-up), 11.0, 10.4, 10.9: the median of the warm ones.
    assert run.metrics["msprof_task_duration_us"] == 10.9
    assert run.metrics["msprof_launches"] == 4
    assert run.device == {"soc": "Ascend910B3"}
    assert "device.json" not in run.digests and "run_1/bubble_analysis.log" in run.digests


def test_a_folder_without_per_core_figures_is_refused_with_what_to_check(tmp_path: Path) -> None:
    """A device run whose log is impossible and that has no swimlane cannot be measured."""
    (tmp_path / "bubble_analysis.log").write_text((STITCHED / "bubble_analysis.log").read_text())
    with pytest.raises(metrics.ArtefactError, match=r"draw_swim_lane\.py"):
        artefacts.read_run_folder(tmp_path)


# ------------------------------------------------------------------ every percentage in range

_times = st.floats(min_value=0, max_value=1e4, allow_nan=False, allow_infinity=False)


@st.composite
def _lanes(draw: st.DrawFn) -> tuple[list[metrics.Lane], dict[object, float]]:
    lanes, keys = [], []
    for index in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["AIC", "AIV", "HUB", "Fake Core"]))
        tasks = []
        for _ in range(draw(st.integers(0, 5))):
            start, length = draw(_times), draw(_times)
            key = (index, len(tasks))
            tasks.append(metrics.LaneTask(key, start, start + length))
            keys.append(key)
        lanes.append(metrics.Lane(f"{kind}_{index}", tuple(tasks)))
    # Readiness anywhere, before or after the task started (stitched edges).
    ready = {key: draw(_times) for key in keys if draw(st.booleans())}
    return lanes, ready


@settings(max_examples=300, deadline=None)
@given(_lanes())
def test_every_percentage_is_within_0_and_100(drawn: tuple[list, dict]) -> None:
    """Whatever the lanes (overlaps, edges that are no waits), every percentage is in range."""
    lanes, ready = drawn
    cores = metrics.cores_from_lanes(lanes, ready)
    assert metrics.inconsistent_cores(cores) == []
    if not any(c.kind in metrics.COMPUTE_KINDS for c in cores):
        return
    figures = metrics.summarize(cores)
    for key, value in figures.items():
        assert math.isfinite(value)
        if "pct" in key:
            assert 0.0 <= value <= 100.0, (key, value)
    e2e, util = metrics.aicore_summary(lanes)
    assert e2e >= 0 and 0.0 <= util <= 100.0 + 1e-9
