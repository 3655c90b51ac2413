"""What status, MEMORY.md and refusals tell (R1, R4, R10)."""

from __future__ import annotations

from cli_harness import OP, Cli, frontend, new_op
from driver import compare, in_stage, initialized, layout

from ledger.projections.memory_status import render_status
from stages import commands as cmd
from stages.policy import DEFAULT_POLICY, effective_policy


def test_the_utilization_stop_defaults_to_incore_only() -> None:
    assert DEFAULT_POLICY["utilization_stop_stages"] == ["incore"]


def test_a_policy_override_is_shown_with_its_reason(cli: Cli) -> None:
    frontend(cli)
    cli.ok("policy", OP, "patience.frontend", "7", "--reason", "slow simulator")
    status = cli.ok("status", OP)
    assert status["policy_overrides"] == [
        {"key": "patience.frontend", "value": 7, "default": 5, "reason": "slow simulator"}
    ]
    text = cli("status", OP, as_json=False).stdout
    assert "  policy patience.frontend = 7 (default 5): slow simulator" in text
    assert (
        "  policy patience.frontend = 7 (default 5): slow simulator"
        in cli("resume", OP, as_json=False).stdout
    )
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    assert "- Policy `patience.frontend` = `7` (default `5`): slow simulator" in memory


def test_status_says_when_the_op_has_no_manifest(cli: Cli) -> None:
    new_op(cli)
    assert cli.ok("status", OP)["manifest"] is None
    assert (
        f"  manifest: none recorded, so knobs have no stages and no defaults "
        f"(tune-ledger manifest {OP} records SPEC.md's)"
    ) in cli("status", OP, as_json=False).stdout


def test_the_r1_gate_says_activate_when_both_pieces_of_evidence_pass() -> None:
    driver = initialized()
    refusal = driver.refusal(cmd.LoadSkill(name="pypto-op-perf-tune"))
    assert refusal.next_step == (
        "record passing evidence for the current implementation: tune-ledger evidence "
        "compare softmax, tune-ledger evidence layout softmax, then tune-ledger activate softmax"
    )
    driver.run(compare())
    driver.run(layout())
    refusal = driver.refusal(cmd.LoadSkill(name="pypto-op-perf-tune"))
    assert refusal.next_step == (
        "both pieces of evidence pass for implementation impl-digest-: tune-ledger activate softmax"
    )


def test_hints_name_the_real_op() -> None:
    driver = in_stage("frontend")
    assert driver.refusal(cmd.EnterStage(stage="swimlane")).next_step == (
        "exit frontend when an exit condition holds (tune-ledger stage exit softmax frontend)"
    )
    assert driver.refusal(cmd.TryMutation(param="x", value=1)).next_step == (
        "tune-ledger point open softmax NAME"
    )
    driver.run(cmd.ExitStage(stage="frontend", by_user=True))
    refusal = driver.refusal(cmd.EnterStage(stage="swimlane"))
    assert refusal.next_step == "tune-ledger skill unload softmax tune-frontend"
    assert driver.refusal(cmd.TryMutation(param="x", value=1)).next_step == (
        "enter the next stage (tune-ledger stage enter softmax swimlane)"
    )


def test_a_stopped_campaign_has_no_current_stage() -> None:
    driver = in_stage("frontend")
    driver.run(cmd.Stop(reason="enough"))
    text = render_status(driver.state, effective_policy(driver.state), "softmax")
    assert "frontend (campaign stopped)" in text
    assert "(current)" not in text
