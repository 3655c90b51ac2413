"""R10 Stop: target, utilization or the user; afterwards only bookkeeping is allowed; a
campaign that reached its target hands back with the report, and a utilization stop is lifted
only by the user's recorded decision."""

from __future__ import annotations

import pytest
from cli_harness import OP, Cli, frontend
from driver import Driver, candidate, compare, in_point, in_stage, layout, sheet, vec, verify

from ledger.errors import BadInput, StoppedRefusal
from stages import commands as cmd
from stages.allowed import allowed

AFTER_STOP_REFUSED = [
    compare(),
    layout(),
    cmd.Activate(impl_digest="impl-digest-1"),
    sheet(),
    cmd.Relax(person="Pat", what="vec", limit=128, basis="profile"),
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
    # What still works is listed (issue 28.4): the report first, no hand-back before it.
    assert refusal.allowed == ("report", "note", "policy", "status", "log", "audit")


def test_notes_reports_and_policy_still_work_after_a_stop() -> None:
    driver = in_point()
    driver.run(cmd.Stop(reason="enough"))
    driver.run(cmd.AddNote(text="stopped at 80 us"))
    driver.run(cmd.RecordReport(path="report.md", digest="abc"))
    driver.run(cmd.SetPolicy(key="alternates", value=2))
    assert driver.types()[-3:] == ["note.added", "report.generated", "policy.set"]
    assert allowed(driver.state) == [
        "report",
        "handback",
        "note",
        "policy",
        "status",
        "log",
        "audit",
    ]
    driver.run(cmd.HandBack(summary="done"))
    assert allowed(driver.state) == ["report", "note", "policy", "status", "log", "audit"]


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


REPORT_PATH = "custom/softmax/softmax_tuning_report.md"
UTIL_DETAIL = "the best has core utilization 85.0% > 80.0% (all-cores) and bubble rate 4.0% < 10.0%"


def target_reached() -> Driver:
    """A campaign whose first candidate reached the target (50 µs) and stopped it."""
    driver = in_point()
    attempt = driver.start(candidate(vec_tile_shape=vec(32)))
    assert driver.verify(attempt, 40.0)["verdict"] == "target-reached"
    return driver


def utilization_stopped() -> Driver:
    """A campaign the utilization stop ended in incore."""
    driver = in_point("incore", "I-1")
    attempt = driver.start(cmd.TryMutation(param="unroll_list", value=[2, 1]))
    driver.run(verify(attempt, 90.0, util=85.0, bubble=4.0))
    assert driver.state.stopped == "utilization"
    return driver


# --- the hand-back -------------------------------------------------------------------------------


def test_a_hand_back_needs_a_report_generated_since_the_stop() -> None:
    driver = target_reached()
    refusal = driver.refusal(cmd.HandBack(summary="done"))
    assert (refusal.rule, refusal.kind, refusal.message, refusal.blocking, refusal.next_step) == (
        "R10",
        "rule",
        "a hand-back carries the tuning report of the campaign as it ended",
        "no report was generated since the campaign stopped (target-reached)",
        "tune-ledger report softmax, then tune-ledger handback softmax --summary TEXT",
    )


def test_a_report_from_before_the_stop_does_not_count() -> None:
    driver = in_point()
    driver.run(cmd.RecordReport(path="old.md", digest="r0"))
    attempt = driver.start(candidate(vec_tile_shape=vec(32)))
    driver.verify(attempt, 40.0)
    assert driver.refusal(cmd.HandBack()).blocking == (
        "no report was generated since the campaign stopped (target-reached)"
    )


def test_after_the_report_the_hand_back_is_an_event() -> None:
    driver = target_reached()
    driver.run(cmd.RecordReport(path=REPORT_PATH, digest="r1"))
    events = driver.run(cmd.HandBack(summary="40 us, 2.5x"))
    assert [(e.type, e.data) for e in events] == [
        (
            "campaign.handed_back",
            {"stop": "target-reached", "report": REPORT_PATH, "summary": "40 us, 2.5x"},
        )
    ]
    assert driver.replayed().handback == {"report": REPORT_PATH, "summary": "40 us, 2.5x"}
    refusal = driver.refusal(cmd.HandBack())
    assert (refusal.rule, refusal.kind, refusal.message, refusal.blocking, refusal.next_step) == (
        "R10",
        "stopped",
        "the result was already handed back to the orchestrator",
        f"handed back with {REPORT_PATH}",
        "nothing to tune: report, note, policy, status, log, audit still work",
    )


def test_nothing_is_handed_back_before_a_stop() -> None:
    refusal = in_point().refusal(cmd.HandBack())
    assert (refusal.rule, refusal.message, refusal.blocking, refusal.next_step) == (
        "R10",
        "nothing to hand back: the campaign has not stopped",
        "stage frontend is in progress and no stop condition holds",
        "tune on (tune-ledger status softmax lists the steps allowed now), or stop it: "
        "tune-ledger stop softmax --reason TEXT",
    )


def test_a_tuning_step_after_the_target_names_the_report_and_the_hand_back() -> None:
    driver = target_reached()
    refusal = driver.refusal(cmd.TryMutation(param="unroll_list", value=[2, 1]))
    assert (refusal.rule, refusal.kind, refusal.next_step) == (
        "R10",
        "stopped",
        "hand the result back to the orchestrator: tune-ledger report softmax, then "
        "tune-ledger handback softmax --summary TEXT",
    )


def test_status_and_resume_say_the_target_was_reached_and_what_ends_it(cli: Cli) -> None:
    frontend(cli)
    attempt = cli.ok("try", OP, "--set", "stitch=64")["attempt"]
    cli.ok("verify", OP, str(attempt), "--output", "y=true", "--layout-exit", "0",
           "--time", "40us")  # fmt: skip
    status = cli.ok("status", OP)
    assert status["campaign_end"] == {
        "stopped": "target-reached",
        "detail": "best 40 µs <= target 50 µs",
        "report": None,
        "handed_back": None,
        "next": [f"tune-ledger report {OP}", f"tune-ledger handback {OP} --summary TEXT"],
    }
    text = cli("status", OP, as_json=False).stdout
    assert (
        "  the campaign reached its target: best 40.00 µs <= target 50.00 µs\n"
        "  report: none generated since the stop\n"
        f"  to end it: tune-ledger report {OP}\n"
        f"  to end it: tune-ledger handback {OP} --summary TEXT\n"
    ) in text
    assert cli.ok("resume", OP)["next"] == status["campaign_end"]["next"]
    report = cli.ok("report", OP)["path"]
    assert cli.ok("resume", OP)["next"] == [f"tune-ledger handback {OP} --summary TEXT"]
    out = cli.ok("handback", OP, "--summary", "target met by stitch")
    assert (out["handed_back"], out["report"], out["stop"]) == (True, report, "target-reached")
    assert [e["type"] for e in out["events"]] == ["campaign.handed_back"]
    text = cli("resume", OP, as_json=False).stdout
    assert f"  handed back to the orchestrator with {report}: target met by stitch\n" in text
    assert cli.ok("resume", OP)["next"] == []
    audit = cli.ok("audit", OP)["ops"][0]
    assert audit["findings"] == []
    assert audit["decisions"] == [
        f"handed back to the orchestrator after the target-reached stop with {report}: "
        "target met by stitch"
    ]


# --- lifting a utilization stop ------------------------------------------------------------------


def test_the_user_lifts_a_utilization_stop_with_a_recorded_reason() -> None:
    driver = utilization_stopped()
    refusal = driver.refusal(cmd.TryMutation(param="unroll_list", value=[8, 1]))
    assert refusal.next_step == (
        "hand the result back to the orchestrator: tune-ledger report softmax, then "
        "tune-ledger handback softmax --summary TEXT; or, if a person decides to go on: "
        "tune-ledger resume-campaign softmax --person NAME --reason TEXT"
    )
    # Without a person it is refused (a person's decision, issue 27) with the command to run.
    refused = driver.refusal(cmd.ResumeCampaign(reason="utilization counts busy time"))
    assert (refused.rule, refused.kind) == ("R10", "rule")
    assert refused.next_step.endswith(
        "tune-ledger resume-campaign softmax --person NAME --reason TEXT"
    )
    events = driver.run(
        cmd.ResumeCampaign(reason="utilization counts busy time", person="Ada Lovelace")
    )
    assert [(e.type, e.data) for e in events] == [
        (
            "campaign.resumed",
            {
                "lifted": UTIL_DETAIL,
                "reason": "utilization counts busy time",
                "person": "Ada Lovelace",
            },
        )
    ]
    assert driver.replayed().stopped is None
    driver.start(cmd.TryMutation(param="unroll_list", value=[8, 1]))


@pytest.mark.parametrize("how", ["target", "user"])
def test_no_other_stop_can_be_lifted(how: str) -> None:
    driver = target_reached() if how == "target" else in_point()
    if how == "user":
        driver.run(cmd.Stop(reason="enough"))
    refusal = driver.refusal(cmd.ResumeCampaign(reason="go on"))
    blocking = {
        "target": "the campaign stopped (target-reached): best 40 µs <= target 50 µs",
        "user": "the campaign stopped (user): enough",
    }[how]
    assert (refusal.rule, refusal.kind, refusal.message, refusal.blocking) == (
        "R10",
        "stopped",
        "only a utilization stop not yet handed back can be lifted",
        blocking,
    )
    with pytest.raises(StoppedRefusal):
        driver.run(cmd.ResumeCampaign(reason="go on"))


def test_a_stop_handed_back_cannot_be_lifted() -> None:
    driver = utilization_stopped()
    driver.run(cmd.RecordReport(path=REPORT_PATH, digest="r1"))
    driver.run(cmd.HandBack())
    refusal = driver.refusal(cmd.ResumeCampaign(reason="go on"))
    assert refusal.blocking == f"the result was handed back with {REPORT_PATH}"


def test_a_running_campaign_has_nothing_to_resume() -> None:
    refusal = in_point().refusal(cmd.ResumeCampaign(reason="go on"))
    assert (refusal.rule, refusal.message, refusal.blocking, refusal.next_step) == (
        "R10",
        "nothing to resume: the campaign has not stopped",
        "stage frontend is in progress",
        "tune on: tune-ledger status softmax lists the steps allowed now",
    )


def test_audit_shows_a_lifted_stop(cli: Cli) -> None:
    frontend(cli)
    cli.ok("policy", OP, "utilization_stop_stages", '["frontend"]', "--reason", "test")
    attempt = cli.ok("try", OP, "--set", "stitch=64")["attempt"]
    cli.ok("verify", OP, str(attempt), "--output", "y=true", "--layout-exit", "0",
           "--time", "90us", "--util", "85", "--bubble", "4")  # fmt: skip
    assert cli.ok("status", OP)["stopped"] == "utilization"
    out = cli.ok("resume-campaign", OP, "--reason", "busy is not useful", "--person", "Ada")
    assert out["resumed"] is True
    assert cli.ok("status", OP)["stopped"] is None
    audit = cli.ok("audit", OP)["ops"][0]
    assert audit["findings"] == []
    resumed = next(e for e in cli.events() if e["type"] == "campaign.resumed")
    assert audit["decisions"] == [
        f"utilization stop lifted by Ada ({resumed['id'][:12]}): busy is not useful "
        f"(the stop: {UTIL_DETAIL})"
    ]
    assert f"  R10: {audit['decisions'][0]}" in cli("audit", OP, as_json=False).stdout
