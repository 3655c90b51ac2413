"""Issue 15 item 7: the algorithm stage can be left by exhausted ideas or a hand-back (R4)."""

from __future__ import annotations

from driver import Driver, in_stage, verify

from stages import commands as cmd

REPORT = cmd.RecordReport(path="custom/softmax/softmax_tuning_report.md", digest="r2")


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
        "try another idea (tune-ledger try softmax --algorithm TEXT --impl PATH); or hand "
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
    driver.run(REPORT)
    events = driver.run(cmd.ExitStage(stage="algorithm", hand_back=True))
    assert events[0].data["condition"] == "hand-back"
