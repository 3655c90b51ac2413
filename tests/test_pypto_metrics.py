"""The PyPTO adapter's pure parts: artefact parsing, figures, evidence, classification, spec."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

# tools/ is not an installed package: `python -m pytest` from the root finds it, the bare
# `pytest` script does not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.pypto import classify, metrics, numerics, spec

DATA = Path(__file__).parent / "data" / "pypto"
FIXTURE = DATA / "bubble_analysis_fake_task.log"


def test_fixture_cores_are_all_parsed_including_fake_task_headers() -> None:
    """Every core block is read, also those whose header carries ', Fake Task: N'."""
    cores = metrics.parse_bubble_log(FIXTURE.read_text())
    assert [c.name for c in cores] == [
        "Fake Core_0",
        "AIC_1",
        "AIC_2",
        "AIV_3",
        "AIV_4",
        "AIV_5",
        "AIV_6",
        "HUB_7",
    ]
    aiv3 = cores[3]
    assert (aiv3.kind, aiv3.tasks, aiv3.fake_tasks) == ("AIV", 3, 1)
    assert (aiv3.work_us, aiv3.wait_us, aiv3.wait_schedule_us) == (12.5, 2.5, 0.5)
    # The upstream analyzer's pattern (quoted in PYPTO.md) silently misses that core.
    upstream = re.findall(
        r"\[(AIC_\d+|AIV_\d+)\] Execute task num:(\d+)\s+Core Total Work Time", FIXTURE.read_text()
    )
    assert "AIV_3" not in [name for name, _ in upstream]


def test_per_core_formulas_match_the_upstream_definitions() -> None:
    """aicore = work − wait; util = aicore/(aicore+wait); bubble = ws/(aicore+ws); idle = 0."""
    cores = {c.name: c for c in metrics.parse_bubble_log(FIXTURE.read_text())}
    assert cores["AIV_3"].aicore_us == 10.0
    assert cores["AIV_3"].utilization_pct == pytest.approx(80.0)
    assert cores["AIV_3"].bubble_pct == pytest.approx(0.5 / 10.5 * 100)
    assert cores["AIV_6"].bubble_pct == pytest.approx(1 / 9 * 100)
    assert (cores["AIV_5"].utilization_pct, cores["AIV_5"].bubble_pct) == (0.0, 0.0)


def test_summary_figures_computed_by_hand() -> None:
    """Used-type averages exclude the idle AIC type; upstream averages include it."""
    figures = metrics.summarize(metrics.parse_bubble_log(FIXTURE.read_text()), 27000)
    assert figures["max_work_time_us"] == 13.0  # HUB_7 ends last
    assert figures["max_work_time_aicore_us"] == 12.5  # AIC/AIV only
    assert figures["total_cycles_us"] == 15.0
    assert figures["util_pct"] == pytest.approx((80 + 100 + 0 + 80) / 4)
    assert figures["bubble_pct"] == pytest.approx((0.5 / 10.5 * 100 + 100 / 9) / 4)
    assert figures["util_pct_all_aicores"] == pytest.approx(260 / 6)
    assert figures["util_pct_cores_with_tasks"] == pytest.approx(260 / 3)
    # aicore times of the AIV cores: 10, 4, 0, 8: mean 5.5, busiest 10.
    assert figures["load_balance_pct"] == pytest.approx(5.5 / 10 * 100)
    assert figures["load_balance_aic_pct_upstream"] == 100.0  # idle AIC cores, as upstream
    assert (figures["tasks"], figures["fake_tasks"], figures["cores_used_aiv"]) == (6, 4, 3)
    assert "total_cycles" not in metrics.summarize(metrics.parse_bubble_log(FIXTURE.read_text()))


def test_load_balance_stays_a_percentage_where_upstreams_goes_negative() -> None:
    """One busy core among idle ones: upstream's 1 − std/mean is negative, mean/max is not."""
    aicore = [9.0, 0.0, 0.0, 0.0]  # mean 2.25, std sqrt(3 * 2.25**2 + 6.75**2) / 2 ≈ 3.90
    upstream_raw = (1 - (sum((v - 2.25) ** 2 for v in aicore) / 4) ** 0.5 / 2.25) * 100
    assert upstream_raw == pytest.approx(-73.2, abs=0.1)
    assert metrics.load_balance_std_pct(aicore) == 0.0  # floored, with the reason documented
    assert metrics.load_balance_pct(aicore) == pytest.approx(25.0)  # 2.25 / 9
    assert metrics.load_balance_pct([3.0, 3.0]) == 100.0
    assert metrics.load_balance_pct([]) == metrics.load_balance_pct([0.0]) == 100.0


def test_a_truncated_core_block_is_refused_with_its_line() -> None:
    """A block missing a field is an error naming the line, never a silently dropped core."""
    broken = "[AIV_1] Execute task num:1\n    Core Total Work Time: 1.0\n    Total Wait Time: 0\n"
    with pytest.raises(metrics.ArtefactError, match=r"bubble_analysis.log:4"):
        metrics.parse_bubble_log(broken)


def test_stat_report_total_cycles() -> None:
    """The labelled 'Total Cycles' line of the stat report is read as a number."""
    text = (
        "=====\nTotal Cycles.....................................:     16546\n"
        "|--Cube Count....................................:        24\n"
    )
    report = metrics.parse_stat_report(text)
    assert report["Total Cycles"] == 16546 and report["Cube Count"] == 24


def _swim_and_topo() -> tuple[list[dict], list[dict]]:
    # Task 1 (control, not on any lane) precedes 2 and 3; 2 precedes 4 on another core.
    swim = [
        {
            "blockIdx": 0,
            "coreType": "AIV",
            "tasks": [
                {"taskId": 2, "seqNo": 0, "execStart": 1800, "execEnd": 3600},
                {"taskId": 5, "seqNo": 0, "execStart": 5400, "execEnd": 7200},
            ],
        },
        {
            "blockIdx": 1,
            "coreType": "AIV",
            "tasks": [
                {"taskId": 3, "seqNo": 0, "execStart": 2700, "execEnd": 4500},
                {"taskId": 4, "seqNo": 0, "execStart": 5400, "execEnd": 9000},
            ],
        },
        {"blockIdx": 2, "coreType": "AIC", "tasks": []},
    ]
    topo = [
        {"seqNo": 0, "taskId": 1, "successors": [2, 3]},
        {"seqNo": 0, "taskId": 2, "successors": [4]},
        {"seqNo": 0, "taskId": 3, "successors": []},
        {"seqNo": 0, "taskId": 4, "successors": []},
        {"seqNo": 0, "taskId": 5, "successors": []},
    ]
    return swim, topo


def test_swimlane_fallback_computed_by_hand() -> None:
    """Work, wait and schedule wait derived from the swimlane and the task graph."""
    swim, topo = _swim_and_topo()
    cores = {c.name: c for c in metrics.cores_from_swim(swim, topo)}
    # Lane 0: start0 = 1800; task 2 ready when control task 1 "ends" (= its first
    # successor's start, 1800): no wait; task 5 has no predecessor: 1 µs wait, all schedule.
    assert cores["AIV_1"].work_us == pytest.approx(3.0)
    assert cores["AIV_1"].wait_us == pytest.approx(1.0)
    assert cores["AIV_1"].wait_schedule_us == pytest.approx(1.0)
    # Lane 1: task 3 waits 0.5 µs after ready (1800); task 4 waits for task 2 (ends 3600)
    # and for the core (free at 4500): 0.5 µs of schedule wait.
    assert cores["AIV_2"].work_us == pytest.approx(4.0)
    assert cores["AIV_2"].wait_us == pytest.approx(1.0)
    assert cores["AIV_2"].wait_schedule_us == pytest.approx(1.0)
    assert cores["AIC_3"].tasks == 0
    assert metrics.swim_span_us(swim) == pytest.approx(4.0)


VERIFY_CSV = (
    "funcID,passName,referPassName,verifyType,loopInfo,ioflag,outputShape,verifyResult,"
    "maxAbsDiff\n"
    '1,tensor_graph,golden,T,l,output1,"[2, 2]",PASS,0.000001\n'
    '2,Pass_04_ExpandFunction,tensor_graph,T,l,output0,"[2, 2]",PASS,0.000000\n'
    '3,Pass_36_CodegenPreproc,tensor_graph,T,l,output0,"[2, 2]",{last},0.250000\n'
)


def _compare(all_close: bool = True, nonzero: bool = True) -> numerics.OutputCompare:
    return numerics.OutputCompare(
        name="y", index=1, all_close=all_close, max_diff=2e-9, nonzero=nonzero
    )


def test_output_evidence_all_close_needs_every_check() -> None:
    """all_close only with our compare, the graph verdict and every pass verdict passing."""
    good = numerics.parse_verify_csv(VERIFY_CSV.format(last="PASS"))
    assert numerics.output_evidence([_compare()], good, 1e-5, 1e-6)[0]["all_close"] is True
    assert (
        numerics.output_evidence([_compare(all_close=False)], good, 1e-5, 1e-6)[0]["all_close"]
        is False
    )
    assert (
        numerics.output_evidence([_compare(nonzero=False)], good, 1e-5, 1e-6)[0]["all_close"]
        is False
    )
    bad_pass = numerics.parse_verify_csv(VERIFY_CSV.format(last="FAILED"))
    evidence = numerics.output_evidence([_compare()], bad_pass, 1e-5, 1e-6)[0]
    assert evidence["all_close"] is False and "Pass_36_CodegenPreproc" in evidence["reason"]
    summary = numerics.pass_summary(bad_pass)
    assert summary["Pass_36_CodegenPreproc"] == {"checked": 1, "failed": 1, "max_abs_diff": 0.25}


def test_evidence_from_rows_names_outputs_from_the_impl() -> None:
    """Without our own compare, the CSV alone gives per-output verdicts named as the impl."""
    rows = numerics.parse_verify_csv(VERIFY_CSV.format(last="PASS"))
    (evidence,) = numerics.evidence_from_rows(rows, (["x"], ["y"]))
    assert (evidence["name"], evidence["all_close"], evidence["max_diff"]) == ("y", True, 1e-6)


@pytest.mark.parametrize(
    ("kwargs", "category"),
    [
        ({"timed_out": True, "error_text": "Run pass failed"}, "timeout"),
        ({"over_memory": True}, "oom"),
        (
            {
                "error_text": "RuntimeError: Errcode: FFFFFF!\nRun pass failed., "
                "func CompileFunction"
            },
            "compile",
        ),
        ({"error_text": "std::bad_alloc"}, "oom"),
        ({"returncode": -9}, "oom"),
        ({"returncode": -11}, "runtime"),
        ({"error_text": "IndexError: list index out of range"}, "runtime"),
    ],
)
def test_failure_categories(kwargs: dict, category: str) -> None:
    """Limits the parent hit come first, then the compiler's words, then memory, then runtime."""
    args = {
        "timed_out": False,
        "over_memory": False,
        "returncode": 1,
        "error_text": "",
        "wall_limit_s": 300.0,
        "memory_limit_mb": 6144.0,
        "peak_rss_mb": 100.0,
        **kwargs,
    }
    failure = classify.classify(**args)
    assert failure is not None and failure.category == category


def test_clean_exit_is_no_failure() -> None:
    """A run that exited 0 with no error text is not a failure."""
    assert (
        classify.classify(
            timed_out=False,
            over_memory=False,
            returncode=0,
            error_text="",
            wall_limit_s=1,
            memory_limit_mb=1,
            peak_rss_mb=1,
        )
        is None
    )


def test_front_matter_reads_yaml() -> None:
    """SPEC.md front matter is YAML (flow and block style); invalid YAML names its line."""
    text = (
        '---\nop_name: softmax\np0_shapes: [[32, 32, 1, 256]]\ntolerance: {"rtol": 1.0e-5}\n---\n'
    )
    front = spec.parse_front_matter(text)
    assert front == {
        "op_name": "softmax",
        "p0_shapes": [[32, 32, 1, 256]],
        "tolerance": {"rtol": 1e-5},
    }
    block = spec.parse_front_matter("---\nknobs:\n  unroll_list: {stage: frontend}\n---\n")
    assert block == {"knobs": {"unroll_list": {"stage": "frontend"}}}
    with pytest.raises(spec.SpecError, match=r"SPEC\.md:3"):
        spec.parse_front_matter("---\nop_name: x\np0_shapes: [[1, 2]\n---\n")


def test_softmax_spec_loads() -> None:
    """The example op's SPEC.md names its P0 shape, dtype, tolerance and a budget."""
    op = spec.load_spec(Path(__file__).parents[1] / "custom" / "softmax")
    assert (op.op_name, op.p0_shape, op.dtype) == ("softmax", [32, 32, 1, 256], "fp32")
    assert op.front_matter["perf_target"]["time_us"] > 0
    assert op.io_names() == (["x"], ["y"])
