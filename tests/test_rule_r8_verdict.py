"""R8 Regression loop: the ledger computes every verdict, judged against measurement noise."""

from __future__ import annotations

from typing import Any

import pytest
from driver import Driver, candidate, in_point, vec, verify
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import BadInput
from stages import commands as cmd
from stages.policy import DEFAULT_POLICY
from stages.verdict import compute_verdict, seed_of


def _started(**sheet_args: Any) -> tuple[Driver, str]:
    driver = in_point(**sheet_args)
    return driver, driver.start(candidate(vec_tile_shape=vec(32)))


@pytest.mark.parametrize(
    ("time", "verdict"),
    [
        (98.0, "adopt"),
        (99.5, "no-gain"),
        (100.0, "no-gain"),
        (100.9, "no-gain"),
        (102.0, "rollback"),
    ],
)
def test_single_values_are_judged_by_the_relative_threshold(time: float, verdict: str) -> None:
    driver, attempt = _started(baseline=100.0)
    data = driver.verify(attempt, time)
    assert data["verdict"] == verdict
    assert (data["method"], data["threshold"], data["low"], data["seed"]) == (
        "threshold",
        0.01,
        None,
        None,
    )
    assert data["best_median_us"] == 100.0 and data["attempt_median_us"] == time
    assert data["ratio"] == pytest.approx(time / 100.0)


def test_the_threshold_is_a_recorded_policy() -> None:
    driver, attempt = _started(baseline=100.0)
    driver.run(cmd.SetPolicy(key="noise_threshold", value=0.05, reason="noisy host", person="Ada"))
    data = driver.verify(attempt, 97.0)
    assert data["verdict"] == "no-gain" and data["threshold"] == 0.05
    assert data["policy"]["noise_threshold"] == 0.05


def test_an_output_not_all_close_is_an_accuracy_failure_rolled_back() -> None:
    driver, attempt = _started()
    data = driver.verify(attempt, 10.0, ok=False, layout=1)
    assert (data["verdict"], data["failure"], data["method"]) == ("rollback", "accuracy", "failure")
    assert driver.state.best is not None and driver.state.best.attempt is None


def test_a_layout_check_exit_is_a_layout_failure_rolled_back() -> None:
    driver, attempt = _started()
    data = driver.verify(attempt, 10.0, layout=2)
    assert (data["verdict"], data["failure"]) == ("rollback", "layout")


def test_repeated_samples_use_a_seeded_bootstrap_interval() -> None:
    driver, attempt = _started(baseline=100.0, samples=(99.0, 100.0, 101.0, 100.5, 99.5))
    data = driver.verify(attempt, 90.0, 91.0, 89.5, 90.5, 90.2)
    assert (data["verdict"], data["method"], data["seed"]) == (
        "adopt",
        "bootstrap",
        seed_of(attempt),
    )
    assert data["low"] < data["high"] < 1.0
    assert data["policy"]["bootstrap_resamples"] == 2000
    assert data["policy"]["bootstrap_confidence"] == 0.95


def test_overlapping_samples_are_no_gain() -> None:
    driver, attempt = _started(baseline=100.0, samples=(95.0, 100.0, 105.0))
    data = driver.verify(attempt, 99.0, 104.0, 96.0)
    assert data["verdict"] == "no-gain" and data["low"] < 1.0 < data["high"]


def test_one_sample_on_either_side_falls_back_to_the_threshold() -> None:
    driver, attempt = _started(baseline=100.0, samples=(99.0, 100.0, 101.0))
    assert driver.verify(attempt, 90.0)["method"] == "threshold"


def test_reaching_the_target_stops_the_campaign() -> None:
    driver, attempt = _started(baseline=100.0, target=50.0)
    events = driver.run(verify(attempt, 49.0))
    assert [e.type for e in events] == ["attempt.measured", "attempt.verdict", "campaign.stopped"]
    assert events[1].data["verdict"] == "target-reached"
    assert events[2].data["reason"] == "target-reached"
    assert driver.state.stopped == "target-reached"
    assert driver.state.best is not None and driver.state.best.attempt == attempt


def test_a_verdict_needs_the_pending_attempt() -> None:
    driver, attempt = _started()
    driver.verify(attempt, 99.0)
    assert driver.refusal(verify(attempt, 98.0)).rule == "R6"
    with pytest.raises(BadInput):
        driver.run(verify("ffffffffffff", 98.0))


@pytest.mark.parametrize(
    "bad",
    [
        {"times": (0.0,)},
        {"times": (float("inf"),)},
        {"times": ()},
        {"util": 120.0},
        {"bubble": -0.5},
    ],
)
def test_invalid_measurements_are_bad_input(bad: dict[str, Any]) -> None:
    driver, attempt = _started()
    times = bad.pop("times", (90.0,))
    with pytest.raises(BadInput):
        driver.run(verify(attempt, *times, **bad))
    assert driver.state.pending == attempt


def test_the_measurement_keeps_its_provenance_level() -> None:
    driver, attempt = _started()
    driver.verify(attempt, 90.0)
    measurement = driver.state.attempts[attempt].measurement
    assert measurement is not None and measurement.origin_level == "reported"


# --- compute_verdict: pure, order-invariant, reproducible ----------------------------------------

times = st.floats(min_value=1.0, max_value=1000.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    best=st.lists(times, min_size=1, max_size=8),
    attempt=st.lists(times, min_size=1, max_size=8),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    data=st.data(),
)
def test_the_verdict_does_not_depend_on_sample_order(
    best: list[float], attempt: list[float], seed: int, data: st.DataObject
) -> None:
    policy = dict(DEFAULT_POLICY)
    first = compute_verdict(best, attempt, 10.0, policy, seed)
    shuffled = compute_verdict(
        data.draw(st.permutations(best)), data.draw(st.permutations(attempt)), 10.0, policy, seed
    )
    assert first == shuffled
    assert first == compute_verdict(best, attempt, 10.0, policy, seed)


def test_a_recorded_verdict_is_re_derived_from_its_own_data() -> None:
    driver, attempt = _started(baseline=100.0, samples=(99.0, 100.0, 101.0))
    data = driver.verify(attempt, 92.0, 93.0, 91.0)
    again = compute_verdict(
        (99.0, 100.0, 101.0), (92.0, 93.0, 91.0), 50.0, data["policy"], data["seed"]
    )
    assert (again.verdict, again.low, again.high, again.ratio) == (
        data["verdict"],
        data["low"],
        data["high"],
        data["ratio"],
    )


# --- policy: recorded, validated, applied -------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("noise", 0.1),
        ("noise_threshold", 1.5),
        ("noise_threshold", "1%"),
        ("bootstrap_resamples", 10),
        ("bootstrap_confidence", 1.0),
        ("patience.incore", 0),
        ("candidates_min", 20),
        ("utilization_stop_scope", "some-cores"),
        ("defaults", {}),
        ("util_stop_pct", float("nan")),
    ],
)
def test_an_unknown_policy_key_or_a_value_out_of_range_is_bad_input(
    key: str, value: object
) -> None:
    driver, _attempt = _started()
    with pytest.raises(BadInput):
        driver.run(cmd.SetPolicy(key=key, value=value))


def test_a_policy_set_before_the_verdict_is_the_one_it_applies() -> None:
    driver, attempt = _started(baseline=100.0, samples=(99.0, 100.0, 101.0))
    driver.run(cmd.SetPolicy(key="bootstrap_resamples", value=500, reason="faster audits"))
    data = driver.verify(attempt, 90.0, 91.0, 89.0)
    assert data["policy"]["bootstrap_resamples"] == 500
    assert data["policy"]["patience.frontend"] == 5
