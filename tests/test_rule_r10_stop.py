"""R10 Stop: target, utilization or the user; afterwards only bookkeeping is allowed."""

from __future__ import annotations

import pytest
from driver import candidate, compare, in_point, in_stage, layout, sheet, vec, verify

from ledger.errors import BadInput, StoppedRefusal
from stages import allowed
from stages import commands as cmd

AFTER_STOP_REFUSED = [
    compare(),
    layout(),
    cmd.Activate(impl_digest="impl-digest-1"),
    sheet(),
    cmd.Relax(what="vec", limit=128, basis="profile"),
    cmd.LoadSkill(name="perf-analyzer"),
    cmd.UnloadSkill(name="tune-frontend"),
    cmd.EnterStage(stage="swimlane"),
    cmd.ExitStage(stage="frontend", by_user=True),
    cmd.OpenPoint(name="F-2"),
    cmd.ClosePoint(name="F-1", reason="x"),
    candidate(vec_tile_shape=vec(16)),
    cmd.TryMutation(param="unroll_list", value=[2, 1]),
    cmd.TryAlgorithm(description="fuse"),
    cmd.Stop(reason="again"),
]


@pytest.mark.parametrize("command", AFTER_STOP_REFUSED, ids=lambda c: type(c).__name__)
def test_every_tuning_step_is_refused_after_a_user_stop(command: object) -> None:
    driver = in_point()
    events = driver.run(cmd.Stop(reason="the user has seen enough"))
    assert events[0].data == {"reason": "user", "detail": "the user has seen enough"}
    refusal = driver.refusal(command)
    assert (refusal.rule, refusal.kind, refusal.to_error().code) == ("R10", "stopped", 6)
    assert refusal.allowed == ()


def test_notes_reports_and_policy_still_work_after_a_stop() -> None:
    driver = in_point()
    driver.run(cmd.Stop(reason="enough"))
    driver.run(cmd.AddNote(text="stopped at 80 us"))
    driver.run(cmd.RecordReport(path="report.md", digest="abc"))
    driver.run(cmd.SetPolicy(key="alternates", value=2))
    assert driver.types()[-3:] == ["note.added", "report.generated", "policy.set"]
    assert allowed(driver.state) == []


def test_a_stop_abandons_the_pending_attempt() -> None:
    driver = in_point()
    attempt = driver.start(candidate(vec_tile_shape=vec(32)))
    events = driver.run(cmd.Stop(reason="enough"))
    assert [e.type for e in events] == ["campaign.stopped", "attempt.abandoned"]
    assert driver.state.pending is None and driver.state.attempts[attempt].status == "abandoned"


def test_a_stop_needs_a_reason() -> None:
    with pytest.raises(BadInput):
        in_point().run(cmd.Stop(reason=""))


def test_an_adopt_with_high_utilization_and_low_bubble_stops() -> None:
    driver = in_point("incore", "I-1")
    attempt = driver.start(cmd.TryMutation(param="unroll_list", value=[2, 1]))
    events = driver.run(verify(attempt, 90.0, util=85.0, bubble=4.0))
    assert [e.type for e in events][-1] == "campaign.stopped"
    assert events[-1].data["reason"] == "utilization"
    assert driver.state.stopped == "utilization"
    with pytest.raises(StoppedRefusal):
        driver.run(cmd.TryMutation(param="unroll_list", value=[8, 1]))


@pytest.mark.parametrize(
    ("time", "util", "bubble"),
    [(100.0, 85.0, 4.0), (90.0, 80.0, 4.0), (90.0, 85.0, 10.0), (90.0, None, 4.0)],
)
def test_no_utilization_stop_without_an_adopt_or_past_the_limits(
    time: float, util: float | None, bubble: float
) -> None:
    driver = in_point("incore", "I-1")
    attempt = driver.start(cmd.TryMutation(param="unroll_list", value=[2, 1]))
    driver.run(verify(attempt, time, util=util, bubble=bubble))
    assert driver.state.stopped is None


def test_the_target_stop_names_the_best_and_the_target() -> None:
    driver = in_stage("frontend", baseline=100.0, target=50.0)
    driver.run(cmd.OpenPoint(name="F-1"))
    attempt = driver.start(candidate(vec_tile_shape=vec(32)))
    events = driver.run(verify(attempt, 45.0))
    assert events[-1].data == {"reason": "target-reached", "detail": "best 45 µs <= target 50 µs"}
