"""R3 Target sheet: written before tuning; tile-shape upper limits; known config keys."""

from __future__ import annotations

from typing import Any

import pytest
from driver import BASE_CONFIG, activated, candidate, in_point, in_stage, sheet, with_sheet

from ledger.errors import BadInput
from stages import commands as cmd
from stages.target import cube_row


def test_the_sheet_records_baseline_target_and_the_first_best() -> None:
    driver = with_sheet(baseline=100.0, target=40.0, samples=(99.0, 100.0, 101.0))
    target = driver.state.target
    assert target is not None
    assert (target.baseline_us, target.target_us, target.target_source) == (100.0, 40.0, "spec")
    assert target.required_speedup == pytest.approx(2.5)  # Baseline / Target
    best = driver.state.best
    assert best is not None and best.attempt is None
    assert best.config == BASE_CONFIG and best.measurement.times_us == (99.0, 100.0, 101.0)


def test_no_stage_before_the_sheet() -> None:
    assert activated().refusal(cmd.EnterStage(stage="frontend")).rule == "R3"


def test_the_sheet_is_fixed_once_a_stage_was_entered() -> None:
    driver = in_stage("frontend")
    assert driver.refusal(sheet()).rule == "R3"


def test_the_sheet_may_be_corrected_before_tuning_starts() -> None:
    driver = with_sheet(baseline=100.0)
    driver.run(sheet(baseline=90.0))
    assert driver.state.best is not None and driver.state.best.time_us == 90.0


def test_a_baseline_that_already_meets_the_target_warns() -> None:
    driver = activated()
    driver.run(sheet(baseline=40.0, target=50.0))
    assert any("already meets the target" in w for w in driver.warnings)


@pytest.mark.parametrize(
    "changes",
    [
        {"baseline": 0.0},
        {"baseline": float("nan")},
        {"target": -1.0},
        {"samples": (100.0, 0.0, 100.0)},
        {"baseline": 100.0, "samples": (1.0, 2.0, 3.0)},  # not the median of its samples
        {"util": 101.0},
        {"bubble": -1.0},
        {"cube_m": 0},
    ],
)
def test_invalid_sheet_values_are_bad_input(changes: dict[str, Any]) -> None:
    with pytest.raises(BadInput):
        activated().run(sheet(**changes))


def test_an_unknown_target_source_is_bad_input() -> None:
    command = sheet()
    with pytest.raises(BadInput):
        activated().run(cmd.SetTarget(**{**_fields(command), "target_source": "guess"}))


def _fields(command: cmd.SetTarget) -> dict[str, Any]:
    from attrs import asdict

    return asdict(command, recurse=False)


@pytest.mark.parametrize(
    "config",
    [
        {"vec_tile_shape": []},
        {"vec_tile_shape": [1, 0]},
        {"vec_tile_shape": [1, 32.0]},
        {"vec_tile_shape": "1,32"},
        {"vec_tile_shape": [True, 2]},
        {"cube_tile_shape": [[16, 16], [16, 16]]},
        {"cube_tile_shape": [[16, 16], [16, 16], [16]]},
        {"cube_tile_shape": [[16, 16], [16, 16], [16, -1]]},
        {"unroll_list": [1, 4]},
        {"unroll_list": [4, 4]},
        {"unroll_list": [4, 0]},
        {"unroll_list": []},
    ],
)
def test_malformed_known_config_keys_are_bad_input(config: dict[str, Any]) -> None:
    with pytest.raises(BadInput):
        in_point().run(cmd.ProposeCandidate(config=config, prior="p"))


def test_other_config_keys_are_free() -> None:
    driver = in_point()
    driver.start(candidate(stitch_function_max_num=64, pass_options={"sg_set_scope": "x"}))


def test_a_vec_tile_beyond_64_is_refused_until_relaxed_with_a_basis() -> None:
    driver = in_point()
    wide = candidate(vec_tile_shape=[1, 32, 1, 256])
    refusal = driver.refusal(wide)
    assert refusal.rule == "R3" and "axis 3 is 256 > 64" in refusal.blocking
    assert driver.refusal(cmd.TryMutation(param="vec_tile_shape", value=[1, 8, 1, 128])).rule == (
        "R3"
    )
    driver.run(
        cmd.Relax(what="vec", limit=256, basis="swimlane shows vector units idle 60%", person="Ada")
    )
    driver.start(wide)


def test_the_target_config_is_held_to_the_limits_too() -> None:
    refusal = activated().refusal(sheet(config={"vec_tile_shape": [128]}))
    assert refusal.rule == "R3"


@pytest.mark.parametrize(
    ("m", "row"),
    [
        (64, ((128, 128), (64, 256), (256, 256))),
        (4096, ((128, 128), (64, 256), (256, 256))),
        (32, ((64, 64), (64, 256), (128, 128))),
        (63, ((64, 64), (64, 256), (128, 128))),
        (16, ((16, 16), (16, None), (128, 128))),
        (1, ((16, 16), (16, 256), (256, 256))),
    ],
)
def test_the_cube_table_is_chosen_by_m(m: int, row: Any) -> None:
    assert cube_row(m) == row


def test_cube_tiles_follow_the_row_of_the_sheets_m() -> None:
    driver = in_point(cube_m=48)
    within = candidate(cube_tile_shape=[[64, 64], [64, 256], [128, 128]])
    driver.start(within)
    driver.verify(driver.state.pending or "", 100.0)
    refusal = driver.refusal(candidate(cube_tile_shape=[[128, 128], [64, 256], [128, 128]]))
    assert refusal.rule == "R3" and "mL0 is 128 > 64" in refusal.blocking


def test_k_of_the_cube_table_is_not_bounded_for_small_m() -> None:
    driver = in_point(cube_m=20)
    driver.start(candidate(cube_tile_shape=[[16, 16], [16, 4096], [128, 128]]))


def test_cube_tiles_are_free_when_the_sheet_records_no_m_until_a_relaxation() -> None:
    driver = in_point()
    driver.start(candidate(cube_tile_shape=[[512, 512], [512, 512], [512, 512]]))
    driver.run(cmd.Abandon(attempt=driver.state.pending or "", reason="test"))
    limit = [[256, 256], [128, 512], [256, 256]]
    driver.run(cmd.Relax(what="cube", limit=limit, basis="prof", person="Ada"))
    assert driver.refusal(candidate(cube_tile_shape=[[512, 512], [16, 16], [16, 16]])).rule == (
        "R3"
    )


@pytest.mark.parametrize(
    ("what", "limit"),
    [("vec", 64), ("vec", 32), ("vec", "128"), ("cube", [[1, 2]]), ("tile", 128)],
)
def test_a_malformed_relaxation_is_bad_input(what: str, limit: Any) -> None:
    with pytest.raises(BadInput):
        activated().run(cmd.Relax(what=what, limit=limit, basis="profiling"))


def test_a_relaxation_needs_its_basis() -> None:
    with pytest.raises(BadInput):
        activated().run(cmd.Relax(what="vec", limit=128, basis=" "))


@pytest.mark.parametrize("value", [{1, 2}, float("nan"), float("inf"), object()])
def test_a_config_value_that_is_not_plain_json_is_bad_input(value: object) -> None:
    with pytest.raises(BadInput):
        in_point().run(cmd.TryMutation(param="stitch", value=value))
