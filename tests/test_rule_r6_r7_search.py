"""R5-R7: change kinds, one change at a time, the constrained search of each point, and
status warning when the kernel on disk is not the best's (R6: start from the best)."""

from __future__ import annotations

import pytest
from cli_harness import OP, Cli, frontend
from driver import BASE_CONFIG, Driver, candidate, in_point, in_stage, vec, verify

from ledger.errors import BadInput
from stages import commands as cmd
from stages.allowed import allowed
from stages.alternates import alternates

# --- R5 change kinds -----------------------------------------------------------------------------


def test_stages_one_to_three_refuse_algorithm_changes() -> None:
    refusal = in_point().refusal(cmd.TryAlgorithm(description="fuse the two loops"))
    assert refusal.rule == "R5"


@pytest.mark.parametrize(
    "command",
    [candidate(vec_tile_shape=vec(32)), cmd.TryMutation(param="unroll_list", value=[2, 1])],
    ids=["candidate", "mutation"],
)
def test_the_algorithm_stage_refuses_config_changes(command: object) -> None:
    assert in_stage("algorithm").refusal(command).rule == "R5"


def test_the_algorithm_stage_takes_algorithm_changes_on_the_best_config() -> None:
    driver = in_stage("algorithm")
    attempt = driver.start(cmd.TryAlgorithm(description="fuse max and sum", impl_digest="d2"))
    started = driver.state.attempts[attempt]
    assert (started.kind, started.point, started.config) == ("algorithm", None, BASE_CONFIG)


def test_an_algorithm_change_without_the_implementation_digest_warns() -> None:
    driver = in_stage("algorithm")
    driver.start(cmd.TryAlgorithm(description="fuse max and sum"))
    assert any("digest" in w for w in driver.warnings)


# --- R6 one change at a time ---------------------------------------------------------------------


def test_a_second_change_waits_for_the_pending_one() -> None:
    driver = in_point()
    first = driver.start(candidate(vec_tile_shape=vec(32)))
    refusal = driver.refusal(candidate(vec_tile_shape=vec(16)))
    assert refusal.rule == "R6" and first in refusal.blocking
    assert set(refusal.allowed) >= {"verify", "fail", "abandon"}


def test_a_mutation_changes_one_parameter_of_the_best_config() -> None:
    driver = in_point()
    attempt = driver.start(cmd.TryMutation(param="unroll_list", value=[8, 1]))
    assert driver.state.attempts[attempt].config == {**BASE_CONFIG, "unroll_list": [8, 1]}


def test_a_mutation_may_add_a_parameter() -> None:
    driver = in_point()
    attempt = driver.start(cmd.TryMutation(param="stitch_function_max_num", value=64))
    assert driver.state.attempts[attempt].config["stitch_function_max_num"] == 64


def test_a_mutation_that_changes_nothing_is_refused() -> None:
    refusal = in_point().refusal(cmd.TryMutation(param="unroll_list", value=[4, 1]))
    assert refusal.rule == "R6"


@pytest.mark.parametrize("command_type", [cmd.Fail, cmd.Abandon])
def test_fail_and_abandon_need_the_pending_attempt(command_type: type) -> None:
    driver = in_point()
    attempt = driver.start(candidate(vec_tile_shape=vec(32)))
    driver.run(cmd.Abandon(attempt=attempt, reason="host crashed"))
    closing = (
        cmd.Fail(attempt=attempt, category="compile")
        if command_type is cmd.Fail
        else cmd.Abandon(attempt=attempt, reason="again")
    )
    assert driver.refusal(closing).rule == "R6"
    with pytest.raises(BadInput):
        driver.run(cmd.Abandon(attempt="000000000000", reason="unknown"))


def test_an_unknown_failure_category_is_bad_input() -> None:
    driver = in_point()
    attempt = driver.start(candidate(vec_tile_shape=vec(32)))
    with pytest.raises(BadInput):
        driver.run(cmd.Fail(attempt=attempt, category="cosmic-ray"))


def test_fail_records_a_rollback_with_its_category() -> None:
    driver = in_point()
    attempt = driver.start(candidate(vec_tile_shape=vec(32)))
    driver.run(cmd.Fail(attempt=attempt, category="oom", detail="UB overflow"))
    failed = driver.state.attempts[attempt]
    assert (failed.status, failed.verdict, failed.failure) == ("failed", "rollback", "oom")
    assert driver.state.pending is None


# --- R7 points -----------------------------------------------------------------------------------


def test_every_attempt_belongs_to_the_open_point() -> None:
    driver = in_stage("frontend")
    assert driver.refusal(candidate(vec_tile_shape=vec(32))).rule == "R7"
    assert driver.refusal(cmd.TryMutation(param="unroll_list", value=[2, 1])).rule == "R7"
    driver.run(cmd.OpenPoint(name="F-1"))
    attempt = driver.start(candidate(vec_tile_shape=vec(32)))
    assert driver.state.attempts[attempt].point == "F-1"
    assert driver.state.points["F-1"].attempts == [attempt]


def test_one_point_open_at_a_time_and_names_are_not_reused() -> None:
    driver = in_point(name="F-1")
    assert driver.refusal(cmd.OpenPoint(name="F-2")).rule == "R7"
    driver.run(cmd.ClosePoint(name="F-1", reason="done"))
    assert driver.refusal(cmd.OpenPoint(name="F-1")).rule == "R7"
    assert driver.refusal(cmd.ClosePoint(name="F-1", reason="again")).rule == "R7"


def test_no_points_in_the_algorithm_stage_or_outside_a_stage() -> None:
    assert in_stage("algorithm").refusal(cmd.OpenPoint(name="A-1")).rule == "R7"
    driver = in_stage("frontend")
    driver.run(cmd.ExitStage(stage="frontend", by_user=True))
    assert driver.refusal(cmd.OpenPoint(name="F-9")).rule == "R4"


def test_closing_a_point_waits_for_the_pending_attempt() -> None:
    driver = in_point()
    driver.start(candidate(vec_tile_shape=vec(32)))
    assert driver.refusal(cmd.ClosePoint(name="F-1", reason="done")).rule == "R6"
    with pytest.raises(BadInput):
        driver.run(cmd.ClosePoint(name="nope", reason="x"))


def test_not_applicable_needs_a_reason() -> None:
    with pytest.raises(BadInput):
        in_point().run(cmd.ClosePoint(name="F-1", reason="", not_applicable=True))


# --- R7 candidate phase --------------------------------------------------------------------------


def test_a_candidate_needs_its_prior() -> None:
    with pytest.raises(BadInput):
        in_point().run(cmd.ProposeCandidate(config={"vec_tile_shape": vec(32)}, prior=" "))


def _measure_candidates(driver: Driver, times: dict[int, float | None]) -> dict[int, str]:
    """Start and verify one candidate per vec width; None records a compile failure."""
    ids = {}
    for width, time in times.items():
        attempt = driver.start(candidate(prior=f"kernel-{width}", vec_tile_shape=vec(width)))
        if time is None:
            driver.run(cmd.Fail(attempt=attempt, category="compile"))
        else:
            driver.verify(attempt, time)
        ids[width] = attempt
    return ids


def test_the_best_candidate_ends_up_adopted_and_failures_are_discarded() -> None:
    driver = in_point()
    ids = _measure_candidates(driver, {32: 90.0, 16: None, 48: 70.0, 8: 95.0, 24: 80.0})
    assert driver.state.best is not None and driver.state.best.attempt == ids[48]
    assert driver.state.adopted == [ids[32], ids[48]]
    assert driver.state.attempts[ids[16]].failure == "compile"


def test_the_best_few_candidates_are_kept_as_alternates() -> None:
    driver = in_point()
    ids = _measure_candidates(driver, {32: 90.0, 16: None, 48: 70.0, 8: 95.0, 24: 80.0, 40: 99.0})
    assert alternates(driver.state) == [ids[24], ids[32], ids[8]]
    driver.run(cmd.SetPolicy(key="alternates", value=1))
    assert alternates(driver.state) == [ids[24]]


def test_the_candidate_phase_ends_when_mutations_start() -> None:
    driver = in_point()
    _measure_candidates(driver, {32: 90.0})
    driver.verify(driver.start(cmd.TryMutation(param="unroll_list", value=[2, 1])), 90.0)
    refusal = driver.refusal(candidate(vec_tile_shape=vec(16)))
    assert refusal.rule == "R7" and "candidate phase" in refusal.message
    assert "candidate" not in allowed(driver.state)


def test_too_few_candidates_warn_at_the_first_mutation() -> None:
    driver = in_point()
    _measure_candidates(driver, {32: 90.0, 16: 95.0})
    driver.start(cmd.TryMutation(param="unroll_list", value=[2, 1]))
    assert any("fewer than the 5" in w for w in driver.warnings)


def test_too_many_candidates_warn() -> None:
    driver = in_point()
    driver.run(cmd.SetPolicy(key="candidates_max", value=6))
    times: dict[int, float | None] = {w: 100.0 - w / 10 for w in (8, 16, 24, 32, 40, 48)}
    _measure_candidates(driver, times)
    assert not driver.warnings
    driver.start(candidate(vec_tile_shape=vec(56)))
    assert any("more than the 6" in w for w in driver.warnings)


# --- R7 mutation phase: no-gain streaks ----------------------------------------------------------


def _mutate(driver: Driver, width: int, time: float) -> dict[str, object]:
    attempt = driver.start(cmd.TryMutation(param="vec_tile_shape", value=vec(width)))
    return driver.verify(attempt, time)


def test_n_mutations_without_gain_exhaust_and_close_the_point() -> None:
    driver = in_point()  # frontend: N = 5
    for width in (8, 16, 24, 32):
        _mutate(driver, width, 100.0)
    assert driver.state.points["F-1"].streak == 4 and driver.state.open_point == "F-1"
    attempt = driver.start(cmd.TryMutation(param="vec_tile_shape", value=vec(40)))
    events = driver.run(verify(attempt, 120.0))
    assert [e.type for e in events] == ["attempt.measured", "attempt.verdict", "point.closed"]
    assert events[2].data["outcome"] == "exhausted"
    after = driver.replayed()
    assert after.open_point is None and after.points["F-1"].outcome == "exhausted"


def test_an_adopt_resets_the_streak_and_failures_do_not_count() -> None:
    driver = in_point()
    _mutate(driver, 8, 100.0)
    _mutate(driver, 16, 100.0)
    assert driver.state.points["F-1"].streak == 2
    attempt = driver.start(cmd.TryMutation(param="vec_tile_shape", value=vec(24)))
    driver.run(cmd.Fail(attempt=attempt, category="timeout"))
    assert driver.state.points["F-1"].streak == 2
    verdict = _mutate(driver, 40, 100.0)
    assert verdict["verdict"] == "no-gain" and driver.state.points["F-1"].streak == 3
    failed = driver.start(cmd.TryMutation(param="vec_tile_shape", value=vec(48)))
    driver.verify(failed, 50.0, ok=False)  # an accuracy failure: not counted
    assert driver.state.points["F-1"].streak == 3
    _mutate(driver, 56, 80.0)
    assert driver.state.points["F-1"].streak == 0


def test_the_streak_limit_is_a_policy_per_stage() -> None:
    driver = in_point("swimlane", "S-1")
    for width in (8, 16, 24, 32, 40):
        _mutate(driver, width, 100.0)
    assert driver.state.open_point == "S-1"  # swimlane: N = 8
    driver.run(cmd.SetPolicy(key="patience.swimlane", value=6))
    _mutate(driver, 48, 100.0)
    assert driver.state.points["S-1"].outcome == "exhausted"


# --- R6: status warns when the kernel on disk is not the best's ----------------------------------


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
    # The ledger kept the best's kernel (custom/OP/kernels/): one command restores it.
    warning = (
        f"R6: {where} has digest {now}, the best was measured with {best[:12]}; restore "
        f"{where} (`tune-ledger kernel restore {OP}`) before the next attempt, which starts "
        "from the best"
    )
    for view in ("status", "resume"):
        assert cli.ok(view, OP)["warnings"] == [warning]
        assert f"warning: {warning}" in cli(view, OP, as_json=False).stderr
    assert cli.ok("kernel", "restore", OP)["changed"] is True
    assert impl.read_text("utf-8") == original
    assert cli.ok("status", OP)["warnings"] == []
    # Without the kept kernel (a ledger older than the store), git is the way back.
    (cli.root / "custom" / OP / "kernels" / f"{best}.py").unlink()
    impl.write_text(original + "# edited\n", "utf-8")
    warning = (
        f"R6: {where} has digest {now}, the best was measured with {best[:12]}; restore "
        f"{where} (`git restore {where}` or `git checkout -- {where}` when git tracks it) "
        "before the next attempt, which starts from the best"
    )
    assert cli.ok("status", OP)["warnings"] == [warning]
