"""R2 Skills: 2 base + 1 tune at most; tune-X only in stage X, unloaded before the next stage."""

from __future__ import annotations

import pytest
from driver import activated, in_stage, with_sheet

from ledger.errors import BadInput
from stages import commands as cmd
from stages.allowed import allowed


def test_base_skills_load_after_activation() -> None:
    driver = activated()
    driver.run(cmd.LoadSkill(name="pypto-op-perf-tune"))
    driver.run(cmd.LoadSkill(name="perf-analyzer"))
    assert driver.state.skills == ["pypto-op-perf-tune", "perf-analyzer"]


def test_an_unknown_skill_is_bad_input() -> None:
    with pytest.raises(BadInput):
        activated().run(cmd.LoadSkill(name="tune-everything"))
    with pytest.raises(BadInput):
        activated().run(cmd.UnloadSkill(name="tune-everything"))


def test_a_tune_skill_needs_the_target_sheet_first() -> None:
    refusal = activated().refusal(cmd.LoadSkill(name="tune-frontend"))
    assert refusal.rule == "R3"


def test_a_tune_skill_loads_only_while_its_stage_is_current() -> None:
    driver = with_sheet()
    assert driver.refusal(cmd.LoadSkill(name="tune-frontend")).rule == "R2"
    driver.run(cmd.EnterStage(stage="frontend"))
    assert driver.refusal(cmd.LoadSkill(name="tune-swimlane")).rule == "R2"
    driver.run(cmd.LoadSkill(name="tune-frontend"))
    assert len(driver.state.skills) == 3


def test_the_budget_is_three_skills_two_base_and_one_tune() -> None:
    driver = in_stage("frontend")
    assert sorted(driver.state.skills) == ["perf-analyzer", "pypto-op-perf-tune", "tune-frontend"]
    refusal = driver.refusal(cmd.LoadSkill(name="perf-analyzer"))
    assert refusal.rule == "R2" and "already loaded" in refusal.message
    assert "skill load" not in allowed(driver.state)


def test_a_skill_not_loaded_cannot_be_unloaded() -> None:
    assert activated().refusal(cmd.UnloadSkill(name="perf-analyzer")).rule == "R2"


def test_the_tune_skill_must_be_unloaded_before_the_next_stage() -> None:
    driver = in_stage("frontend")
    driver.run(cmd.ExitStage(stage="frontend", by_user=True))
    refusal = driver.refusal(cmd.EnterStage(stage="swimlane"))
    assert refusal.rule == "R2" and "tune-frontend" in refusal.message
    assert "skill unload" in refusal.allowed
    driver.run(cmd.UnloadSkill(name="tune-frontend"))
    driver.run(cmd.EnterStage(stage="swimlane"))
    assert driver.state.stage == "swimlane"


def test_a_tune_skill_of_an_exited_stage_cannot_be_loaded_again() -> None:
    driver = in_stage("frontend")
    driver.run(cmd.ExitStage(stage="frontend", by_user=True))
    driver.run(cmd.UnloadSkill(name="tune-frontend"))
    assert driver.refusal(cmd.LoadSkill(name="tune-frontend")).rule == "R2"


@pytest.mark.parametrize("skill", ["tune-frontend", "tune-swimlane", "tune-incore"])
def test_no_tune_skill_in_the_algorithm_stage(skill: str) -> None:
    driver = in_stage("algorithm")
    assert driver.refusal(cmd.LoadSkill(name=skill)).rule == "R2"
