"""`priors` leaves out candidates that cannot fit the op or change nothing:
tiles larger than the P0 shape, values the manifest's domain excludes, the best or the
defaults once defaults are filled in, each named in the filtered list."""

from __future__ import annotations

from typing import Any

from cli_harness import OP, Cli, frontend
from driver import BASE_CONFIG, Driver, in_point

from ledger.priors.focus import STAGE_KEYS, Focus
from ledger.priors.prior import Prior
from ledger.priors.rank import propose
from stages import commands as cmd

FRONTEND = Focus(
    stage="frontend", point="F-1", keys=(*STAGE_KEYS["frontend"], "stitch_function_max_num")
)
KNOBS = {
    "stitch_function_max_num": {"stage": "frontend", "kind": "int", "default": 128},
    "vec_tile_shape": {"stage": "frontend", "kind": "tile", "default": [1, 8, 1, 64]},
    "unroll_list": {"stage": "frontend", "domain": [[4, 1], [8, 1], [2, 1]], "default": [2, 1]},
}


def source(**values: Any) -> Prior:
    return Prior(values=values, kind="source", provenance="source k.py:7", weight=0.6)


def reasons(driver: Driver, *priors: Prior) -> dict[str, tuple[str | None, str]]:
    proposal = propose(driver.state, FRONTEND, list(priors))
    return {str(sorted(f.config.items())): (f.rule, f.reason) for f in proposal.filtered}


def key(**changes: Any) -> str:
    return str(sorted({**BASE_CONFIG, **changes}.items()))


def with_manifest(p0: list[int] | None = None) -> Driver:
    driver = in_point()
    declared: dict[str, Any] = {"knobs": KNOBS}
    if p0 is not None:
        declared["p0_shapes"] = [p0]
    driver.run(cmd.RecordManifest(digest="m1", source="SPEC.md", declared=declared))
    return driver


def test_a_tile_larger_than_the_target_sheets_shape_is_filtered() -> None:
    found = reasons(in_point(), source(vec_tile_shape=[1, 8, 16, 64]))
    assert found[key(vec_tile_shape=[1, 8, 16, 64])] == (
        None,
        "vec_tile_shape [1,8,16,64] has 16 on axis 2, larger than the P0 shape's 1 "
        "([32,32,1,256], from the target sheet)",
    )


def test_the_manifests_p0_shape_comes_first() -> None:
    found = reasons(with_manifest([16, 16, 1, 256]), source(vec_tile_shape=[1, 32, 1, 64]))
    assert found[key(vec_tile_shape=[1, 32, 1, 64])] == (
        None,
        "vec_tile_shape [1,32,1,64] has 32 on axis 1, larger than the P0 shape's 16 "
        "([16,16,1,256], from the op manifest (SPEC.md))",
    )


def test_a_value_outside_the_manifests_domain_is_filtered_with_r5() -> None:
    found = reasons(with_manifest(), source(unroll_list=[16, 1]))
    assert found[key(unroll_list=[16, 1])] == (
        "R5",
        "unroll_list=[16,1] is outside its domain [[4,1], [8,1], [2,1]] in the op manifest "
        "(SPEC.md)",
    )


def test_a_default_spelt_out_is_no_change_and_says_so() -> None:
    found = reasons(with_manifest(), source(stitch_function_max_num=128))
    assert found[key(stitch_function_max_num=128)] == (
        "R6",
        "no change: equal to the best config once the defaults of the op manifest (SPEC.md) "
        "are filled in: stitch_function_max_num 128 is its default",
    )


def test_an_exact_copy_of_the_best_stays_an_r9_retry() -> None:
    found = reasons(with_manifest(), source(vec_tile_shape=BASE_CONFIG["vec_tile_shape"]))
    assert found[key()] == (
        "R9",
        "already measured by the baseline: the baseline of the target sheet",
    )


def test_the_manifests_defaults_are_filtered_when_the_best_is_elsewhere() -> None:
    # The baseline runs unroll_list [4,1]; the manifest's default is [2,1], never measured.
    found = reasons(with_manifest(), source(unroll_list=[2, 1]))
    assert found[key(unroll_list=[2, 1])] == (
        "R6",
        "equal to the defaults of the op manifest (SPEC.md)",
    )


def test_the_cli_lists_each_reason_in_the_filtered_list(cli: Cli) -> None:
    frontend(cli)
    source_dir = cli.root / "kernels"
    source_dir.mkdir()
    (source_dir / "other.py").write_text("pypto.set_vec_tile_shapes(1, 8, 16, 64)\n", "utf-8")
    data = cli.ok("priors", OP, "--from-source", str(source_dir), "--no-builtin")
    filtered = {str(f["config"].get("vec_tile_shape")): f for f in data["filtered"]}
    assert filtered["[1, 8, 16, 64]"]["reason"] == (
        "vec_tile_shape [1,8,16,64] has 16 on axis 2, larger than the P0 shape's 1 "
        "([32,32,1,256], from the target sheet)"
    )
    text = cli("priors", OP, "--from-source", str(source_dir), "--no-builtin", as_json=False)
    assert (
        '  - {"vec_tile_shape":[1,8,16,64]}: vec_tile_shape [1,8,16,64] has 16 on axis 2, '
        "larger than the P0 shape's 1 ([32,32,1,256], from the target sheet)"
    ) in text.stdout
