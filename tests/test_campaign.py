"""Whole campaigns: from init through every stage to the target, and on to the algorithm stage."""

from __future__ import annotations

import pytest
from driver import IMPL, Driver, candidate, compare, initialized, layout, sheet, vec, verify

from ledger.errors import RetryRefusal, StoppedRefusal
from stages import commands as cmd
from stages.allowed import allowed, protocol_steps
from stages.alternates import alternates
from stages.conflicts import conflicts

REPORT = cmd.RecordReport(path="custom/softmax/softmax_tuning_report.md", digest="sha-report")


def _frontend(driver: Driver) -> None:
    """Activation, the sheet, and a frontend stage searched and exhausted."""
    driver.run(compare())
    driver.run(layout())
    driver.run(cmd.Activate(impl_digest=IMPL))
    assert protocol_steps(driver.state) == ["target", "relax", "skill load", "stop"]
    driver.run(cmd.LoadSkill(name="pypto-op-perf-tune"))
    driver.run(cmd.LoadSkill(name="perf-analyzer"))
    driver.run(sheet(baseline=100.0, target=50.0, samples=(99.0, 100.0, 101.0)))
    driver.run(cmd.EnterStage(stage="frontend"))
    driver.run(cmd.LoadSkill(name="tune-frontend"))
    driver.run(cmd.OpenPoint(name="F-1"))
    times = {32: 92.0, 16: None, 48: 85.0, 8: 97.0, 24: 88.0}
    for width, time in times.items():
        attempt = driver.start(
            candidate(prior=f"production kernel {width}", vec_tile_shape=vec(width))
        )
        if time is None:
            driver.run(cmd.Fail(attempt=attempt, category="compile"))
        else:
            driver.verify(attempt, time)
    best = driver.state.best
    assert best is not None and best.config["vec_tile_shape"] == vec(48)
    assert len(alternates(driver.state)) == 3
    for unroll in ([8, 1], [2, 1], [16, 1], [8, 2, 1], [4, 2, 1]):
        driver.verify(driver.start(cmd.TryMutation(param="unroll_list", value=unroll)), 85.2)
    assert driver.state.points["F-1"].outcome == "exhausted"
    driver.run(cmd.OpenPoint(name="F-2"))
    driver.run(cmd.ClosePoint(name="F-2", reason="no stitch in softmax", not_applicable=True))
    assert driver.run(cmd.ExitStage(stage="frontend"))[0].data["condition"] == "points-closed"
    driver.run(cmd.UnloadSkill(name="tune-frontend"))


def _swimlane_and_incore(driver: Driver, incore_time: float) -> None:
    driver.run(cmd.EnterStage(stage="swimlane"))
    driver.run(cmd.LoadSkill(name="tune-swimlane"))
    driver.run(cmd.OpenPoint(name="S-3"))
    adopted = driver.verify(
        driver.start(cmd.TryMutation(param="stitch_function_max_num", value=64)), 70.0
    )
    assert adopted["verdict"] == "adopt"
    driver.run(cmd.ClosePoint(name="S-3", reason="stitch tuned"))
    driver.run(cmd.ExitStage(stage="swimlane"))
    driver.run(cmd.UnloadSkill(name="tune-swimlane"))
    driver.run(cmd.EnterStage(stage="incore"))
    driver.run(cmd.LoadSkill(name="tune-incore"))
    driver.run(cmd.OpenPoint(name="I-2"))
    driver.verify(
        driver.start(cmd.TryMutation(param="vec_nbuffer_setting", value={"-1": 2})), incore_time
    )


def test_a_campaign_from_init_to_the_target() -> None:
    driver = initialized()
    _frontend(driver)
    _swimlane_and_incore(driver, incore_time=48.0)
    assert driver.state.stopped == "target-reached"
    assert driver.state.best is not None and driver.state.best.time_us == 48.0
    assert [driver.state.attempts[a].kind for a in driver.state.adopted] == [
        "candidate",
        "candidate",
        "mutation",
        "mutation",
    ]
    assert allowed(driver.state) == ["report", "note", "policy", "status", "log", "audit"]
    with pytest.raises(StoppedRefusal):
        driver.run(cmd.ExitStage(stage="incore", by_user=True))
    assert driver.replayed() == driver.state
    assert conflicts(driver.state) == ()


def test_a_campaign_that_needs_the_algorithm_stage() -> None:
    driver = initialized()
    _frontend(driver)
    _swimlane_and_incore(driver, incore_time=66.0)
    driver.run(cmd.ClosePoint(name="I-2", reason="buffers tuned"))
    driver.run(cmd.ExitStage(stage="incore"))
    driver.run(cmd.UnloadSkill(name="tune-incore"))
    assert "report" in allowed(driver.state) and "stage enter" not in allowed(driver.state)
    driver.run(REPORT)
    assert "stage enter" in allowed(driver.state)
    driver.run(cmd.EnterStage(stage="algorithm"))
    assert protocol_steps(driver.state) == ["skill unload", "stage exit", "try", "stop"]

    idea = cmd.TryAlgorithm(
        description="Compute max and sum in one pass (online softmax)", impl_digest="impl-online"
    )
    failed = driver.start(idea)
    assert driver.state.pending == failed
    assert driver.verify(failed, 80.0)["verdict"] == "rollback"
    with pytest.raises(RetryRefusal):
        driver.run(
            cmd.TryAlgorithm(
                description="compute max & sum in one pass: online softmax",
                impl_digest="impl-online-2",
            )
        )
    better = driver.start(
        cmd.TryAlgorithm(
            description="keep each row resident in UB for exp", impl_digest="impl-resident"
        )
    )
    events = driver.run(verify(better, 45.0))
    assert [e.type for e in events][-1] == "campaign.stopped"
    assert driver.state.stopped == "target-reached"
    assert driver.state.best is not None and driver.state.best.attempt == better
    assert driver.replayed() == driver.state
