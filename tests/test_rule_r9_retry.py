"""R9 No retry: measured configs and failed algorithm ideas are refused unless overridden."""

from __future__ import annotations

import pytest
from driver import BASE_CONFIG, Driver, candidate, in_point, in_stage, vec

from ledger.errors import BadInput, RetryRefusal
from stages import commands as cmd
from stages.retry import normalize_idea, similarity


def test_the_baseline_config_counts_as_measured() -> None:
    refusal = in_point().refusal(cmd.ProposeCandidate(config=dict(BASE_CONFIG), prior="p"))
    assert (refusal.rule, refusal.kind) == ("R9", "retry")
    assert "baseline" in refusal.message
    assert refusal.to_error().code == 4


def test_a_config_measured_before_is_refused_naming_the_attempt_and_outcome() -> None:
    driver = in_point()
    first = driver.start(candidate(vec_tile_shape=vec(32)))
    driver.verify(first, 120.0)
    refusal = driver.refusal(candidate(prior="other", vec_tile_shape=vec(32)))
    assert refusal.kind == "retry" and first in refusal.message and "rollback" in refusal.message


def test_a_mutation_back_to_a_measured_config_is_refused() -> None:
    driver = in_point()
    wide = driver.start(cmd.TryMutation(param="vec_tile_shape", value=vec(32)))
    driver.verify(wide, 90.0)  # adopted: the best is now vec(32)
    refusal = driver.refusal(cmd.TryMutation(param="vec_tile_shape", value=vec(64)))
    assert refusal.kind == "retry" and "baseline" in refusal.message


def test_a_failed_config_blocks_but_an_abandoned_one_does_not() -> None:
    driver = in_point()
    failed = driver.start(candidate(vec_tile_shape=vec(32)))
    driver.run(cmd.Fail(attempt=failed, category="compile", detail="pass failed"))
    refusal = driver.refusal(candidate(vec_tile_shape=vec(32)))
    assert refusal.kind == "retry" and "compile failure" in refusal.message
    abandoned = driver.start(candidate(vec_tile_shape=vec(16)))
    driver.run(cmd.Abandon(attempt=abandoned, reason="interrupted"))
    driver.start(candidate(vec_tile_shape=vec(16)))


def test_an_override_with_a_reason_measures_again_and_is_recorded() -> None:
    driver = in_point()
    first = driver.start(candidate(vec_tile_shape=vec(32)))
    driver.verify(first, 120.0)
    again = driver.start(
        cmd.ProposeCandidate(
            config={**BASE_CONFIG, "vec_tile_shape": vec(32)}, prior="p", override="host was loaded"
        )
    )
    assert driver.state.attempts[again].retry_override == "host was loaded"
    assert driver.state.overrides == [(again, "host was loaded")]


def test_an_override_without_a_reason_is_bad_input() -> None:
    with pytest.raises(BadInput):
        in_point().run(cmd.ProposeCandidate(config=dict(BASE_CONFIG), prior="p", override=" "))


def test_an_unneeded_override_is_not_recorded_and_warns() -> None:
    driver = in_point()
    attempt = driver.start(cmd.TryMutation(param="unroll_list", value=[2, 1], override="why"))
    assert driver.state.attempts[attempt].retry_override is None
    assert any("override was not needed" in w for w in driver.warnings)


# --- algorithm ideas ---------------------------------------------------------------------------


def _tried(driver: Driver, idea: str, time: float) -> str:
    attempt = driver.start(cmd.TryAlgorithm(description=idea, impl_digest="d"))
    driver.verify(attempt, time)
    return attempt


def test_ideas_are_normalized_for_case_whitespace_and_punctuation() -> None:
    assert normalize_idea("  Fuse  MAX, and sum!! ") == "fuse max and sum"


@pytest.mark.parametrize(
    "idea",
    [
        "fuse max and sum into one pass",
        "Fuse max & sum into one pass.",
        "fuse the max and sum into one pass",
        "fuse sum and max into one pass",
    ],
)
def test_an_idea_like_a_failed_one_is_refused(idea: str) -> None:
    driver = in_stage("algorithm")
    earlier = _tried(driver, "fuse max and sum into one pass", 120.0)
    refusal = driver.refusal(cmd.TryAlgorithm(description=idea))
    assert refusal.kind == "retry" and earlier in refusal.message


def test_a_different_idea_is_allowed() -> None:
    driver = in_stage("algorithm")
    _tried(driver, "fuse max and sum into one pass", 120.0)
    driver.start(cmd.TryAlgorithm(description="keep the row in UB and reuse it for exp"))


def test_an_adopted_idea_is_not_a_failed_one() -> None:
    driver = in_stage("algorithm")
    _tried(driver, "fuse max and sum into one pass", 90.0)
    driver.start(cmd.TryAlgorithm(description="fuse max and sum into one pass"))


def test_the_similarity_threshold_is_a_policy_and_override_skips_it() -> None:
    driver = in_stage("algorithm")
    _tried(driver, "fuse max and sum into one pass", 120.0)
    driver.run(cmd.SetPolicy(key="retry_similarity", value=0.85))
    with pytest.raises(RetryRefusal):  # similarity 0.90: a retry at 0.85, not at 0.9
        driver.run(cmd.TryAlgorithm(description="fuse max and sum into one single pass"))
    driver.run(cmd.SetPolicy(key="retry_similarity", value=0.9))
    driver.start(cmd.TryAlgorithm(description="fuse max and sum into one single pass"))
    driver.run(cmd.Abandon(attempt=driver.state.pending or "", reason="x"))
    attempt = driver.start(
        cmd.TryAlgorithm(description="fuse max and sum into one pass", override="new compiler")
    )
    assert driver.state.attempts[attempt].retry_override == "new compiler"


def test_similarity_is_symmetric_and_one_for_equal_ideas() -> None:
    a, b = normalize_idea("tile the reduction"), normalize_idea("tile reduction twice")
    assert similarity(a, b) == similarity(b, a)
    assert similarity(a, a) == 1.0
