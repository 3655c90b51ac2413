"""R1 Activation: evidence bound to the implementation digest gates every tuning step."""

from __future__ import annotations

import pytest
from driver import IMPL, Driver, activated, compare, initialized, layout, sheet

from ledger.errors import BadInput, HandBack
from stages import commands as cmd
from stages.allowed import ANYTIME, allowed, protocol_steps
from stages.policy import DEFAULT_POLICY


def test_activation_passes_with_both_pieces_of_evidence_for_the_current_implementation() -> None:
    driver = initialized()
    compare_event = driver.run(compare())[0]
    layout_event = driver.run(layout())[0]
    events = driver.run(cmd.Activate(impl_digest=IMPL))
    assert [e.type for e in events] == ["activation.passed"]
    assert events[0].data == {
        "impl_digest": IMPL,
        "compare_event": compare_event.id,
        "layout_event": layout_event.id,
    }
    assert driver.state.activated


@pytest.mark.parametrize(
    ("evidence", "problem"),
    [
        ([], "no E2E tensor-compare evidence"),
        ([compare()], "no layout-check evidence"),
        ([compare(ok=False, name="out0"), layout()], "outputs not all_close: out0"),
        ([compare(), layout(code=3)], "exited 3"),
        ([compare(digest="old"), layout()], "stale"),
        ([compare(), layout(digest="old")], "stale"),
    ],
)
def test_a_failed_activation_hands_back_and_records_the_failed_check(
    evidence: list[object], problem: str
) -> None:
    driver = initialized()
    for command in evidence:
        driver.run(command)
    with pytest.raises(HandBack) as raised:
        driver.run(cmd.Activate(impl_digest=IMPL))
    assert raised.value.code == 5
    assert raised.value.rule == "R1"
    assert driver.types()[-1] == "activation.failed"
    recorded = driver.events[-1].data
    assert recorded["handed_back_to"] == "pypto-op-orchestrator"
    assert any(problem in p for p in recorded["problems"])
    assert driver.state.handed_back and not driver.state.activated


def test_only_the_latest_evidence_counts() -> None:
    driver = initialized()
    driver.run(compare(ok=False))
    driver.run(compare(ok=True))
    driver.run(layout())
    driver.run(cmd.Activate(impl_digest=IMPL))
    assert driver.state.activated


TUNING_STEPS = [
    sheet(),
    cmd.Relax(person="Pat", what="vec", limit=128, basis="profile"),
    cmd.LoadSkill(name="perf-analyzer"),
    cmd.UnloadSkill(name="perf-analyzer"),
    cmd.EnterStage(stage="frontend"),
    cmd.ExitStage(stage="frontend"),
    cmd.OpenPoint(name="F-1"),
    cmd.ClosePoint(name="F-1", reason="x"),
    cmd.ProposeCandidate(config={}, prior="p"),
    cmd.TryMutation(param="x", value=1),
    cmd.TryAlgorithm(description="fuse"),
    cmd.Abandon(attempt="abc", reason="x"),
    cmd.Stop(reason="user"),
]


@pytest.mark.parametrize("command", TUNING_STEPS, ids=lambda c: type(c).__name__)
def test_every_tuning_step_is_refused_before_activation(command: object) -> None:
    refusal = initialized().refusal(command)
    assert (refusal.rule, refusal.kind) == ("R1", "rule")
    assert refusal.to_error().code == 3


@pytest.mark.parametrize("command", TUNING_STEPS, ids=lambda c: type(c).__name__)
def test_nothing_else_happens_after_a_failed_activation_until_one_passes(command: object) -> None:
    driver = activated()
    driver.run(compare(digest="impl-2", ok=False))
    with pytest.raises(HandBack):
        driver.run(cmd.Activate(impl_digest="impl-2"))
    refusal = driver.refusal(command)
    assert refusal.rule == "R1"
    assert "outputs not all_close" in refusal.blocking


def test_activation_reopens_tuning_after_the_evidence_is_fixed() -> None:
    driver = initialized()
    with pytest.raises(HandBack):
        driver.run(cmd.Activate(impl_digest=IMPL))
    driver.run(compare())
    driver.run(layout())
    driver.run(cmd.Activate(impl_digest=IMPL))
    driver.run(cmd.LoadSkill(name="perf-analyzer"))
    assert driver.state.skills == ["perf-analyzer"]
    assert not driver.state.handed_back


def test_notes_and_policy_are_allowed_before_activation() -> None:
    driver = initialized()
    driver.run(cmd.AddNote(text="waiting for accuracy"))
    driver.run(cmd.SetPolicy(key="noise_threshold", value=0.005))
    assert driver.state.notes == ["waiting for accuracy"]
    assert driver.state.policy["noise_threshold"] == 0.005


def test_allowed_before_activation_offers_evidence_then_activate() -> None:
    driver = initialized()
    assert protocol_steps(driver.state) == ["evidence compare", "evidence layout"]
    # and what works at any time follows them (issue 28: allowed is complete)
    assert allowed(driver.state) == ["evidence compare", "evidence layout", *ANYTIME]
    driver.run(compare())
    driver.run(layout())
    assert protocol_steps(driver.state) == ["evidence compare", "evidence layout", "activate"]


def test_a_refusal_names_the_allowed_next_steps() -> None:
    refusal = initialized().refusal(cmd.LoadSkill(name="perf-analyzer"))
    assert refusal.allowed[:2] == ("evidence compare", "evidence layout")
    assert "activate" not in refusal.allowed and "note" in refusal.allowed
    assert "activate" in refusal.next_step


def test_init_pins_the_default_policy_in_the_ledger() -> None:
    driver = initialized()
    assert driver.types() == ["op.initialized", "policy.set"]
    assert driver.state.policy == dict(DEFAULT_POLICY)


def test_commands_before_init_and_a_second_init_are_bad_input() -> None:
    with pytest.raises(BadInput):
        Driver().run(compare())
    with pytest.raises(BadInput):
        initialized().run(cmd.Init(op="softmax"))


def test_an_empty_implementation_digest_is_bad_input() -> None:
    with pytest.raises(BadInput):
        initialized().run(compare(digest=""))
