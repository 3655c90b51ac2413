"""Issue 15 items 4, 6, 8: a target reached hands back with the report, a utilization stop is
lifted only by the user's recorded decision, and status warns when the kernel on disk is not
the best's (R6, R10)."""

from __future__ import annotations

import pytest
from cli_harness import OP, Cli, frontend
from driver import Driver, candidate, in_point, vec, verify

from ledger.errors import StoppedRefusal
from stages import commands as cmd

REPORT = "custom/softmax/softmax_tuning_report.md"
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


# --- item 8: the hand-back -------------------------------------------------------------------


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
    driver.run(cmd.RecordReport(path=REPORT, digest="r1"))
    events = driver.run(cmd.HandBack(summary="40 us, 2.5x"))
    assert [(e.type, e.data) for e in events] == [
        (
            "campaign.handed_back",
            {"stop": "target-reached", "report": REPORT, "summary": "40 us, 2.5x"},
        )
    ]
    assert driver.replayed().handback == {"report": REPORT, "summary": "40 us, 2.5x"}
    refusal = driver.refusal(cmd.HandBack())
    assert (refusal.rule, refusal.kind, refusal.message, refusal.blocking, refusal.next_step) == (
        "R10",
        "stopped",
        "the result was already handed back to the orchestrator",
        f"handed back with {REPORT}",
        "nothing to tune: status, log, report, audit, note and policy still work",
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


# --- item 6: lifting a utilization stop --------------------------------------------------------


def test_the_user_lifts_a_utilization_stop_with_a_recorded_reason() -> None:
    driver = utilization_stopped()
    refusal = driver.refusal(cmd.TryMutation(param="unroll_list", value=[8, 1]))
    assert refusal.next_step == (
        "hand the result back to the orchestrator: tune-ledger report softmax, then "
        "tune-ledger handback softmax --summary TEXT; or, if the user decides to go on: "
        "tune-ledger resume-campaign softmax --reason TEXT"
    )
    events = driver.run(cmd.ResumeCampaign(reason="utilization counts busy time"))
    assert [(e.type, e.data) for e in events] == [
        ("campaign.resumed", {"lifted": UTIL_DETAIL, "reason": "utilization counts busy time"})
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
    driver.run(cmd.RecordReport(path=REPORT, digest="r1"))
    driver.run(cmd.HandBack())
    refusal = driver.refusal(cmd.ResumeCampaign(reason="go on"))
    assert refusal.blocking == f"the result was handed back with {REPORT}"


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
    out = cli.ok("resume-campaign", OP, "--reason", "busy is not useful")
    assert out["resumed"] is True
    assert cli.ok("status", OP)["stopped"] is None
    audit = cli.ok("audit", OP)["ops"][0]
    assert audit["findings"] == []
    resumed = next(e for e in cli.events() if e["type"] == "campaign.resumed")
    assert audit["decisions"] == [
        f"utilization stop lifted by the user ({resumed['id'][:12]}): busy is not useful "
        f"(the stop: {UTIL_DETAIL})"
    ]
    assert f"  R10: {audit['decisions'][0]}" in cli("audit", OP, as_json=False).stdout


# --- item 4: status warns when the kernel on disk is not the best's -----------------------------


def test_status_warns_as_soon_as_the_implementation_differs(cli: Cli) -> None:
    from ledger.domain.inputs import file_digest

    frontend(cli)
    impl = cli.root / "custom" / OP / f"{OP}_impl.py"
    best = file_digest(impl)
    assert cli.ok("status", OP)["warnings"] == []
    assert cli.ok("status", OP)["impl_digest_expected"] == best
    original = impl.read_text("utf-8")
    impl.write_text(original + "# edited\n", "utf-8")
    now = file_digest(impl)[:12]
    where = f"custom/{OP}/{OP}_impl.py"
    warning = (
        f"R6: {where} has digest {now}, the best was measured with {best[:12]}; restore "
        f"{where} (`git restore {where}` or `git checkout -- {where}` when git tracks it) "
        "before the next attempt, which starts from the best"
    )
    for view in ("status", "resume"):
        assert cli.ok(view, OP)["warnings"] == [warning]
        assert f"warning: {warning}" in cli(view, OP, as_json=False).stderr
    impl.write_text(original, "utf-8")
    assert cli.ok("status", OP)["warnings"] == []
