"""R4 Stage order: frontend -> swimlane -> incore -> algorithm, entry and exit conditions; the
algorithm stage is left by exhausted ideas or a hand-back."""

from __future__ import annotations

import pytest
from driver import Driver, candidate, in_point, in_stage, vec, verify, with_sheet

from ledger.errors import BadInput
from stages import commands as cmd
from stages.allowed import allowed

REPORT = cmd.RecordReport(path="custom/softmax/softmax_tuning_report.md", digest="r")


def test_frontend_is_entered_first_and_stages_are_not_skipped() -> None:
    driver = with_sheet()
    refusal = driver.refusal(cmd.EnterStage(stage="swimlane"))
    assert refusal.rule == "R4" and "next stage is frontend" in refusal.blocking
    driver.run(cmd.EnterStage(stage="frontend"))
    assert driver.state.stage == "frontend"


def test_there_is_no_going_back() -> None:
    driver = in_stage("swimlane")
    refusal = driver.refusal(cmd.EnterStage(stage="frontend"))
    assert refusal.rule == "R4" and "no going back" in refusal.message


def test_the_next_stage_needs_the_previous_one_exited() -> None:
    driver = in_stage("frontend")
    driver.run(cmd.UnloadSkill(name="tune-frontend"))
    assert driver.refusal(cmd.EnterStage(stage="swimlane")).rule == "R4"


def test_an_unknown_stage_is_bad_input() -> None:
    with pytest.raises(BadInput):
        with_sheet().run(cmd.EnterStage(stage="backend"))


def test_a_stage_without_an_exit_condition_cannot_be_exited() -> None:
    driver = in_stage("frontend")
    refusal = driver.refusal(cmd.ExitStage(stage="frontend"))
    assert refusal.rule == "R4" and "no optimization point was opened" in refusal.blocking


def test_only_the_current_stage_can_be_exited() -> None:
    driver = in_stage("swimlane")
    refusal = driver.refusal(cmd.ExitStage(stage="frontend", by_user=True))
    assert refusal.rule == "R4" and "not the current stage" in refusal.message


def test_a_stage_exits_when_every_point_it_opened_is_closed() -> None:
    driver = in_point("frontend", "F-1")
    assert driver.refusal(cmd.ExitStage(stage="frontend")).rule == "R4"  # F-1 is still open
    driver.run(cmd.ClosePoint(name="F-1", reason="done"))
    driver.run(cmd.OpenPoint(name="F-2"))
    driver.run(cmd.ClosePoint(name="F-2", reason="no stitch here", not_applicable=True))
    events = driver.run(cmd.ExitStage(stage="frontend"))
    assert events[0].data["condition"] == "points-closed"
    assert driver.state.exited == {"frontend": "points-closed"}


def test_no_exit_with_an_attempt_pending() -> None:
    driver = in_point()
    driver.start(candidate(vec_tile_shape=vec(32)))
    refusal = driver.refusal(cmd.ExitStage(stage="frontend", by_user=True))
    assert refusal.rule == "R4" and "pending" in refusal.blocking


def test_the_users_stop_exits_a_stage() -> None:
    driver = in_stage("frontend")
    events = driver.run(cmd.ExitStage(stage="frontend", reason="user: enough", by_user=True))
    assert events[0].data == {"stage": "frontend", "condition": "user", "reason": "user: enough"}


def test_a_met_target_exits_a_stage() -> None:
    driver = in_stage("frontend", baseline=40.0, target=50.0)
    events = driver.run(cmd.ExitStage(stage="frontend"))
    assert events[0].data["condition"] == "target-met"


def test_incore_exits_on_utilization_and_bubble_of_the_best_measurement() -> None:
    driver = in_stage("incore", util=85.0, bubble=5.0)
    events = driver.run(cmd.ExitStage(stage="incore"))
    assert events[0].data["condition"] == "utilization"


def test_utilization_is_no_exit_condition_outside_incore() -> None:
    driver = in_stage("swimlane", util=85.0, bubble=5.0)
    assert driver.refusal(cmd.ExitStage(stage="swimlane")).rule == "R4"


def test_utilization_exit_follows_the_policy_thresholds() -> None:
    driver = in_stage("incore", util=85.0, bubble=5.0)
    driver.run(cmd.SetPolicy(key="util_stop_pct", value=90))
    assert driver.refusal(cmd.ExitStage(stage="incore")).rule == "R4"


def test_algorithm_needs_a_report_generated_after_incore_exited() -> None:
    driver = in_stage("incore")
    driver.run(REPORT)  # before the exit: does not count
    driver.run(cmd.ExitStage(stage="incore", by_user=True))
    driver.run(cmd.UnloadSkill(name="tune-incore"))
    refusal = driver.refusal(cmd.EnterStage(stage="algorithm"))
    assert refusal.rule == "R4" and "report" in refusal.message
    assert "report" in allowed(driver.state)
    driver.run(REPORT)
    driver.run(cmd.EnterStage(stage="algorithm"))
    assert driver.state.stage == "algorithm"


def test_algorithm_needs_the_target_unmet() -> None:
    driver = in_stage("incore", baseline=40.0, target=50.0)
    driver.run(cmd.ExitStage(stage="incore"))
    driver.run(cmd.UnloadSkill(name="tune-incore"))
    driver.run(REPORT)
    refusal = driver.refusal(cmd.EnterStage(stage="algorithm"))
    assert refusal.rule == "R4" and "target" in refusal.message


def test_allowed_follows_the_pipeline() -> None:
    driver = with_sheet()
    assert "stage enter" in allowed(driver.state)
    driver.run(cmd.EnterStage(stage="frontend"))
    names = allowed(driver.state)
    assert "stage enter" not in names
    assert {"skill load", "stage exit", "point open"} <= set(names)


# --- leaving the algorithm stage -----------------------------------------------------------------

# A report generated in the algorithm stage, after its attempts.
ALGORITHM_REPORT = cmd.RecordReport(path="custom/softmax/softmax_tuning_report.md", digest="r2")


def ideas(driver: Driver, count: int) -> None:
    start = len(driver.state.attempts)
    for index in range(start, start + count):
        attempt = driver.start(cmd.TryAlgorithm(description=f"idea {index} " * (index + 1),
                                                impl_digest=f"d{index}"))  # fmt: skip
        driver.run(verify(attempt, 150.0))


def test_three_ideas_without_gain_let_the_algorithm_stage_exit() -> None:
    driver = in_stage("algorithm")
    ideas(driver, 2)
    refusal = driver.refusal(cmd.ExitStage(stage="algorithm"))
    assert (refusal.rule, refusal.message, refusal.blocking, refusal.next_step) == (
        "R4",
        "no exit condition of algorithm holds",
        "the target is not met; 2 of 3 consecutive algorithm attempts without gain "
        "(policy algorithm_patience)",
        "try another idea (edit custom/softmax/softmax_impl.py, then tune-ledger try softmax "
        "--algorithm TEXT --impl custom/softmax/softmax_impl.py); or hand "
        "back with the report (tune-ledger report softmax, then tune-ledger stage exit "
        "softmax algorithm --hand-back); or the user says stop (tune-ledger stage exit "
        "softmax algorithm --user-stop)",
    )
    ideas(driver, 1)
    events = driver.run(cmd.ExitStage(stage="algorithm"))
    assert [(e.type, e.data["condition"]) for e in events] == [("stage.exited", "ideas-exhausted")]


def test_a_hand_back_needs_a_report_of_every_attempt() -> None:
    driver = in_stage("algorithm")
    ideas(driver, 1)
    refusal = driver.refusal(cmd.ExitStage(stage="algorithm", hand_back=True))
    assert (refusal.rule, refusal.message, refusal.next_step) == (
        "R4",
        "a hand-back needs the tuning report of every attempt",
        "generate it (tune-ledger report softmax), then tune-ledger stage exit softmax "
        "algorithm --hand-back",
    )
    driver.run(ALGORITHM_REPORT)
    events = driver.run(cmd.ExitStage(stage="algorithm", hand_back=True))
    assert events[0].data["condition"] == "hand-back"
