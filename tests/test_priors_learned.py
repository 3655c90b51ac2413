"""Issue 28 item 5: priors rank candidates with what this op's own ledger measured, and say how
the op's prior candidates fared (adopted, no gain, rolled back, failed)."""

from __future__ import annotations

import json
from typing import Any

import golden_priors
from cli_harness import Cli
from driver import Driver, in_point
from test_priors_cli import campaign, spec_text, tile

from ledger.priors.focus import Focus
from ledger.priors.learned import op_measurements
from ledger.priors.moves import key_moves
from ledger.priors.prior import Prior
from ledger.priors.rank import Proposal, proposal_json, propose
from ledger.priors.record import track_record
from stages import commands as cmd

VEC = Focus(stage="frontend", point="vec_tile_shape", keys=("vec_tile_shape",))
CUBE = Focus(stage="frontend", point="cube_tile_shape", keys=("cube_tile_shape",))


def source(tile: list[int], weight: float = 0.5) -> Prior:
    """A kernel-source prior for one vec tile, named after it."""
    return Prior(
        values={"vec_tile_shape": tile}, kind="source", provenance=f"k.py {tile}", weight=weight
    )


def tried(tile: list[int]) -> cmd.ProposeCandidate:
    """A candidate that sets the vec tile, the one key of these configs."""
    return cmd.ProposeCandidate(config={"vec_tile_shape": tile}, prior="test")


def measured(baseline_tile: list[int], *runs: tuple[list[int], float | str]) -> Driver:
    """A vec tile point whose baseline (100 µs) and candidates (a time or a failure) ran."""
    driver = in_point(name="vec_tile_shape", config={"vec_tile_shape": baseline_tile})
    for run, result in runs:
        attempt = driver.start(tried(run))
        if isinstance(result, str):
            driver.run(cmd.Fail(attempt=attempt, category=result, detail="test"))
        else:
            driver.verify(attempt, result)
    return driver


def candidate_tiles(proposal: Proposal) -> list[list[int]]:
    return [c.config["vec_tile_shape"] for c in proposal.candidates]


def dropped(proposal: Proposal) -> dict[str, str]:
    """The candidates the op's own measurements left out: tile -> reason."""
    return {
        json.dumps(f.config["vec_tile_shape"], separators=(",", ":")): f.reason
        for f in proposal.filtered
        if f.learned is not None
    }


# --- moves ----------------------------------------------------------------------------------


def test_a_key_moves_axis_by_axis_scalar_up_or_down_and_unroll_lists_by_their_largest() -> None:
    moves = key_moves("vec_tile_shape", [1, 16, 1, 64], [1, 32, 1, 32], "tile")
    assert [(m.where, m.direction, m.value) for m in moves] == [
        ("axis 1", "larger", 32),
        ("axis 3", "smaller", 32),
    ]
    [down] = key_moves("stitch_function_max_num", 128, 64, "int")
    assert (down.where, down.direction) == ("", "smaller")
    [longer] = key_moves("unroll_list", [1], [8, 4, 2, 1], "int-list")
    assert (longer.where, longer.direction, longer.value) == ("largest", "larger", 8)
    cube = key_moves("cube_tile_shape", [[64, 64], [64, 64]], [[64, 64], [128, 256]], "json")
    assert [(m.where, m.direction) for m in cube] == [("[1][0]", "larger"), ("[1][1]", "larger")]
    [changed] = key_moves("vec_nbuffer_setting", None, {"-1": 2}, "json")
    assert (changed.direction, changed.value) == ("changed", '{"-1":2}')


# --- the ranking learns -----------------------------------------------------------------------


def test_smaller_tiles_measured_slower_are_left_out_citing_the_attempts() -> None:
    driver = measured([1, 8, 1, 64])
    smaller = driver.start(tried([1, 8, 1, 32]))
    driver.verify(smaller, 180.0)
    priors = [source([1, 8, 1, 16], 0.9), source([1, 4, 1, 64], 0.8), source([1, 16, 1, 64], 0.3)]

    proposal = propose(driver.state, VEC, priors)

    reasons = dropped(proposal)
    assert set(reasons) == {"[1,8,1,16]"}  # axis 3 smaller, as the measured 32 was
    assert "vec_tile_shape axis 3 smaller: measured slower this way" in reasons["[1,8,1,16]"]
    assert f"attempt {smaller}" in reasons["[1,8,1,16]"] and "1.80x slower" in reasons["[1,8,1,16]"]
    # The untested ways stay, ranked by their score as before.
    assert candidate_tiles(proposal) == [[1, 4, 1, 64], [1, 16, 1, 64]]
    [entry] = [f for f in proposal_json(proposal)["filtered"] if f["learned"]]
    assert entry["learned"]["call"] == "slower" and entry["rule"] is None
    [finding] = entry["learned"]["findings"]
    assert (finding["start"], finding["end"], finding["outcome"]) == ("baseline", smaller, "slower")
    assert finding["ratio"] == 1.8


def test_the_same_priors_without_the_measurement_propose_the_smaller_tile_first() -> None:
    priors = [source([1, 8, 1, 16], 0.9), source([1, 4, 1, 64], 0.8), source([1, 16, 1, 64], 0.3)]
    proposal = propose(measured([1, 8, 1, 64]).state, VEC, priors)
    assert candidate_tiles(proposal)[0] == [1, 8, 1, 16] and not dropped(proposal)


def test_larger_tiles_measured_faster_rank_first_whatever_their_score() -> None:
    driver = measured([1, 8, 1, 16], ([1, 8, 1, 32], 50.0))  # adopted: the best
    priors = [source([1, 4, 1, 32], 0.9), source([1, 16, 1, 32], 0.8), source([1, 8, 1, 64], 0.2)]

    proposal = propose(driver.state, VEC, priors)

    assert candidate_tiles(proposal) == [[1, 8, 1, 64], [1, 4, 1, 32], [1, 16, 1, 32]]
    first = proposal.candidates[0]
    assert first.learned is not None and first.learned.call == "faster"
    assert first.reasons[-1].startswith(
        "learned from this op: vec_tile_shape axis 3 larger: measured faster this way"
    )
    assert "2.00x faster" in first.reasons[-1]
    # Without the measurement, its low score puts it last.
    fresh = propose(measured([1, 8, 1, 32]).state, VEC, priors)
    assert candidate_tiles(fresh)[-1] == [1, 8, 1, 64]


def test_smaller_tiles_measured_faster_rank_first_whatever_their_score() -> None:
    driver = measured([1, 8, 1, 64], ([1, 8, 1, 32], 60.0))  # adopted: the best
    priors = [source([1, 4, 1, 32], 0.9), source([1, 16, 1, 32], 0.8), source([1, 8, 1, 16], 0.2)]

    proposal = propose(driver.state, VEC, priors)

    assert candidate_tiles(proposal) == [[1, 8, 1, 16], [1, 4, 1, 32], [1, 16, 1, 32]]
    first = proposal.candidates[0]
    assert first.learned is not None and first.learned.call == "faster"
    assert "vec_tile_shape axis 3 smaller: measured faster this way" in first.reasons[-1]
    assert "1.67x faster" in first.reasons[-1]


def test_pairs_starting_at_the_best_outweigh_farther_ones() -> None:
    # Larger was faster from the baseline (8 -> 16) but slower from the best (16 -> 32).
    driver = measured([1, 8, 1, 8], ([1, 8, 1, 32], 120.0), ([1, 8, 1, 16], 50.0))
    assert driver.state.best is not None and driver.state.best.time_us == 50.0

    proposal = propose(driver.state, VEC, [source([1, 8, 1, 48])])

    reason = dropped(proposal)["[1,8,1,48]"]
    assert "2.40x slower" in reason and "faster" not in reason


def test_a_slower_config_drops_only_candidates_that_go_at_least_as_far() -> None:
    # Softmax's P0: axis 1 from 4 to 32 was slower, yet 16 is the fastest of the three.
    driver = measured([1, 4, 1, 64], ([1, 32, 1, 64], 180.0))

    proposal = propose(driver.state, VEC, [source([1, 16, 1, 64]), source([1, 32, 1, 32])])

    assert candidate_tiles(proposal) == [[1, 16, 1, 64]]
    assert set(dropped(proposal)) == {"[1,32,1,32]"}


def test_a_config_that_failed_to_compile_drops_candidates_that_go_as_far_its_way() -> None:
    base = {"cube_tile_shape": [[64, 64], [64, 64], [64, 64]]}
    driver = in_point(name="cube_tile_shape", config=base)
    failed = driver.start(cmd.ProposeCandidate(config=_cube(256), prior="p"))
    driver.run(cmd.Fail(attempt=failed, category="compile", detail="L1 overflow"))
    priors = [
        Prior(
            values={"cube_tile_shape": _cube(k)["cube_tile_shape"]},
            kind="source",
            provenance=f"k{k}",
            weight=0.5,
        )
        for k in (128, 512)
    ]

    proposal = propose(driver.state, CUBE, priors)

    [kept] = proposal.candidates
    assert kept.config == _cube(128)
    [left_out] = [f for f in proposal.filtered if f.learned is not None]
    assert left_out.config == _cube(512)
    assert f"failed (compile) in attempt {failed}" in left_out.reason


def _cube(k: int) -> dict[str, Any]:
    return {"cube_tile_shape": [[64, 64], [k, k], [64, 64]]}


def test_measurements_of_another_kernel_are_not_learned_from() -> None:
    driver = measured([1, 8, 1, 64], ([1, 8, 1, 32], 180.0))
    driver.run(cmd.ClosePoint(name="vec_tile_shape", reason="test"))
    driver.run(cmd.ExitStage(stage="frontend", reason="skip in test", by_user=True))
    driver.run(cmd.UnloadSkill(name="tune-frontend"))
    for stage in ("swimlane", "incore"):
        driver.run(cmd.EnterStage(stage=stage))
        driver.run(cmd.ExitStage(stage=stage, reason="skip in test", by_user=True))
    driver.run(cmd.RecordReport(path="custom/softmax/softmax_tuning_report.md", digest="r1"))
    driver.run(cmd.EnterStage(stage="algorithm"))
    change = driver.start(cmd.TryAlgorithm(description="fused loop", impl_digest="impl-digest-2"))
    driver.verify(change, 60.0)  # adopted: the best now runs another kernel
    priors = [source([1, 8, 1, 16])]
    before = propose(measured([1, 8, 1, 64], ([1, 8, 1, 32], 180.0)).state, VEC, priors)
    assert "[1,8,1,16]" in dropped(before)  # the same measurements, with the best's kernel

    proposal = propose(driver.state, VEC, priors)

    assert not dropped(proposal) and candidate_tiles(proposal) == [[1, 8, 1, 16]]
    assert op_measurements(driver.state).other_kernel == 1
    assert any("ran another kernel" in note for note in proposal.notes)


def test_with_nothing_measured_but_the_baseline_the_ranking_is_todays() -> None:
    expected = json.loads(golden_priors.GOLDEN.read_text(encoding="utf-8"))
    assert golden_priors.build() == expected


# --- the track record -------------------------------------------------------------------------


def test_the_track_record_counts_prior_candidates_by_outcome_but_not_remeasures() -> None:
    driver = measured([1, 8, 1, 64], ([1, 8, 1, 32], 60.0), ([1, 8, 1, 16], 90.0))
    driver.verify(driver.start(tried([1, 4, 1, 32])), 60.1)
    driver.run(cmd.Fail(attempt=driver.start(tried([1, 2, 1, 32])), category="compile", detail="x"))
    driver.start(cmd.TryMutation(param="vec_tile_shape", value=[1, 16, 1, 32]))

    record = track_record(driver.state)

    assert (record.adopted, record.no_gain, record.rolled_back, record.failed) == (1, 1, 1, 1)
    assert record.measured == 4 and record.unfinished == 0 and record.kept_share == 0.5
    assert record.text() == (
        "prior candidates: 4 measured, 1 adopted, 1 no-gain, 1 rolled back, 1 failed "
        "(50% adopted or no-gain)"
    )


def test_priors_prints_why_a_candidate_was_left_out_and_the_track_record(cli: Cli) -> None:
    campaign(
        cli.root, "softmax", {"p0_shapes": [[32, 32, 1, 256]]}, [(tile(32), 150.0)], base=tile(64)
    )
    data = cli.ok("priors", "softmax", "--keys", "vec_tile_shape")
    left_out = [f for f in data["filtered"] if f["learned"]]
    assert left_out and all(f["learned"]["call"] == "slower" for f in left_out)
    assert all(f["config"]["vec_tile_shape"][3] < 64 for f in left_out)
    assert data["record"] == {
        "measured": 1,
        "adopted": 0,
        "no_gain": 0,
        "rolled_back": 1,
        "failed": 0,
        "unfinished": 0,
        "kept_share": 0.0,
    }
    human = cli("priors", "softmax", "--keys", "vec_tile_shape", as_json=False).stdout
    assert "vec_tile_shape axis 3 smaller: measured slower this way" in human
    assert "prior candidates: 1 measured, 0 adopted, 0 no-gain, 1 rolled back, 0 failed" in human
    assert spec_text  # the SPEC writer the campaign used
