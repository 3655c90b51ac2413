"""Knobs belong to stages and points, defaults are no change, R9 compares
configs by value, and a new attempt starts from the best implementation (R5, R6, R7, R9)."""

from __future__ import annotations

import pytest
from cli_harness import OP, Cli, activate, frontend, snapshot
from driver import IMPL, Driver, in_point, in_stage, verify
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.domain.inputs import file_digest
from ledger.errors import RetryRefusal
from stages import commands as cmd

SPEC = (
    "---\n"
    "p0_shapes: [[32, 32, 1, 256]]\n"
    "perf_target: {time_us: 50.0, metric: max_work_time_us}\n"
    "baseline_config: {vec_tile_shape: [1, 8, 1, 64]}\n"
    "knobs:\n"
    "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n"
    "  unroll_list: {stage: frontend, kind: int-list, default: [1]}\n"
    "  stitch: {stage: swimlane, kind: int, default: 128}\n"
    "---\n# sm\n"
)
KNOBS = {
    "vec_tile_shape": {"stage": "frontend", "kind": "tile", "default": [1, 8, 1, 64]},
    "unroll_list": {"stage": "frontend", "kind": "int-list", "default": [1]},
    "stitch": {"stage": "swimlane", "kind": "int", "default": 128},
}


def manifest_in_frontend(cli: Cli, point: str = "vec_tile_shape", *knobs: str) -> None:
    """An activated op whose manifest is recorded, in frontend with `point` open."""
    activate(cli)
    (cli.root / "custom" / OP / "SPEC.md").write_text(SPEC, "utf-8")
    cli.ok("manifest", OP)
    cli.ok(
        "target", OP, "--baseline", "100us", "--shape", "32x32x1x256", "--target", "50us",
        "--target-source", "spec", "--config", '{"vec_tile_shape":[1,8,1,64]}', "--tool", "sim",
    )  # fmt: skip
    cli.ok("skill", "load", OP, "pypto-op-perf-tune")
    cli.ok("stage", "enter", OP, "frontend")
    cli.ok("point", "open", OP, point, *(a for k in knobs for a in ("--knob", k)))


def refused(cli: Cli, code: int, *args: str) -> dict[str, object]:
    before = snapshot(cli.root)
    result = cli(*args)
    assert result.code == code, result.stdout
    assert snapshot(cli.root) == before
    return result.json


# --- knobs belong to stages and points -----------------------------------------------------------


def test_a_knob_of_another_stage_is_refused_with_r5(cli: Cli) -> None:
    manifest_in_frontend(cli)
    out = refused(cli, 3, "try", OP, "--set", "stitch=64")
    assert (out["rule"], out["error"], out["blocking"], out["next"]) == (
        "R5",
        "knob stitch belongs to the swimlane stage, not to frontend",
        f"the op manifest (custom/{OP}/SPEC.md) puts stitch in stage swimlane",
        "change a knob of the frontend stage (unroll_list, vec_tile_shape)",
    )


def test_a_knob_outside_the_open_point_is_refused_with_r7(cli: Cli) -> None:
    manifest_in_frontend(cli)
    out = refused(cli, 3, "try", OP, "--set", "unroll_list=[2,1]")
    assert (out["rule"], out["error"], out["blocking"], out["next"]) == (
        "R7",
        "knob unroll_list is outside point vec_tile_shape",
        "point vec_tile_shape tunes vec_tile_shape",
        f"close it (tune-ledger point close {OP} vec_tile_shape --reason TEXT), then open a "
        f"point for unroll_list (tune-ledger point open {OP} unroll_list), or a multi-knob "
        f"point that tunes them together (tune-ledger point open {OP} NAME --knob "
        "vec_tile_shape --knob unroll_list)",
    )


def test_a_candidate_changing_a_knob_outside_the_point_is_refused(cli: Cli) -> None:
    manifest_in_frontend(cli)
    config = '{"vec_tile_shape":[1,16,1,64],"unroll_list":[2,1]}'
    out = refused(cli, 3, "candidate", OP, "--config", config, "--prior", "p")
    assert out["rule"] == "R7"


def test_a_point_opened_for_named_knobs_records_them(cli: Cli) -> None:
    manifest_in_frontend(cli, "F-1", "vec_tile_shape", "unroll_list")
    assert cli.events()[-1]["payload"]["knobs"] == ["vec_tile_shape", "unroll_list"]
    cli.ok("try", OP, "--set", "unroll_list=[2,1]")


def test_a_point_whose_name_is_no_knob_is_refused(cli: Cli) -> None:
    manifest_in_frontend(cli)
    cli.ok("point", "close", OP, "vec_tile_shape", "--reason", "r")
    out = refused(cli, 3, "point", "open", OP, "F-2")
    assert (out["rule"], out["error"], out["next"]) == (
        "R7",
        "point F-2 names no knob of the op manifest",
        f"open it for named knobs (tune-ledger point open {OP} F-2 --knob KNOB)",
    )
    out = refused(cli, 3, "point", "open", OP, "F-2", "--knob", "stitch")
    assert out["rule"] == "R5"


def test_without_a_manifest_points_have_no_knobs(cli: Cli) -> None:
    frontend(cli)
    assert "knobs" not in cli.events()[-1]["payload"]  # the event is as the older code wrote it
    cli.ok("try", OP, "--set", "stitch=64")


# --- defaults are no change; R9 compares by value ------------------------------------------------


def test_setting_a_knob_to_its_default_is_no_change(cli: Cli) -> None:
    manifest_in_frontend(cli, "F-1", "unroll_list")
    out = refused(cli, 3, "try", OP, "--set", "unroll_list=[1]")
    assert (out["rule"], out["error"], out["blocking"]) == (
        "R6",
        "the mutation leaves unroll_list unchanged",
        f"unroll_list = [1] is its default in the op manifest (custom/{OP}/SPEC.md), "
        "and the best config leaves unroll_list at its default",
    )


def test_a_config_spelling_out_a_default_shares_the_baselines_r9_key(cli: Cli) -> None:
    manifest_in_frontend(cli)
    config = '{"vec_tile_shape":[1,8,1,64],"unroll_list":[1]}'
    out = refused(cli, 4, "candidate", OP, "--config", config, "--prior", "p")
    assert out["error"] == (
        "this config was already measured by the baseline: the baseline of the target sheet"
    )


def test_a_manifest_recorded_later_rekeys_the_measured_configs() -> None:
    driver = in_point()
    assert driver.state.best is not None
    config = {**driver.state.best.config, "stitch": 64}
    first = driver.start(cmd.ProposeCandidate(config=config, prior="p"))
    driver.verify(first, 120.0)
    mode = {"mode": {"stage": "frontend", "default": 0}}
    driver.run(cmd.RecordManifest(digest="m1", source="SPEC.md", declared={"knobs": mode}))
    with pytest.raises(RetryRefusal, match=f"already measured by attempt {first}: rollback"):
        driver.run(cmd.ProposeCandidate(config={**config, "mode": -0.0}, prior="p"))
    assert driver.replayed().measured_configs == driver.state.measured_configs


STITCH_128 = st.one_of(
    st.integers(0, 15).map(lambda k: f"{128 * 10**k}e-{k}"),
    st.integers(1, 8).map(lambda n: "128." + "0" * n),
    st.integers(1, 8).map(lambda n: f"0.{'0' * (n - 1)}128e{n + 2}"),
    st.sampled_from(["128", "1.28e2", "1.28E2", "1.28e+2", "12.8e1"]),
)
ZERO = st.sampled_from(["0", "-0", "0.0", "-0.0", "-0e5", "0E-3", "-0.000"])


@pytest.fixture
def rolled_back(cli: Cli) -> Cli:
    """In frontend (no manifest), `stitch=128` and `z=0` each tried and rolled back."""
    frontend(cli)
    for assignment in ("stitch=128", "z=0"):
        attempt = cli.ok("try", OP, "--set", assignment)["attempt"]
        cli.ok("verify", OP, str(attempt), "--output", "y=true", "--layout-exit", "0",
               "--time", "150us")  # fmt: skip
    return cli


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spelling=STITCH_128)
def test_every_spelling_of_a_rolled_back_value_is_refused(rolled_back: Cli, spelling: str) -> None:
    result = rolled_back("try", OP, "--set", f"stitch={spelling}")
    assert result.code == 4, (spelling, result.stdout)
    assert result.json["rule"] == "R9"


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spelling=ZERO)
def test_minus_zero_is_zero_for_r9(rolled_back: Cli, spelling: str) -> None:
    assert rolled_back("try", OP, "--set", f"z={spelling}").code == 4


# --- algorithm changes by implementation digest --------------------------------------------------


def algorithm() -> Driver:
    return in_stage("algorithm")


def test_an_algorithm_change_with_the_best_implementation_is_refused_with_r5() -> None:
    refusal = algorithm().refusal(cmd.TryAlgorithm(description="fuse", impl_digest=IMPL))
    assert (refusal.rule, refusal.message, refusal.blocking) == (
        "R5",
        "no algorithm change: the implementation is the best's",
        f"implementation {IMPL[:12]} is the one the best was measured with",
    )


def test_an_implementation_measured_before_is_refused_with_r9() -> None:
    driver = algorithm()
    first = driver.start(cmd.TryAlgorithm(description="fuse rows", impl_digest="d2"))
    driver.run(verify(first, 150.0))
    refusal = driver.refusal(cmd.TryAlgorithm(description="other words", impl_digest="d2"))
    assert (refusal.rule, refusal.kind, refusal.message) == (
        "R9",
        "retry",
        f"this implementation was already measured by attempt {first}: rollback",
    )
    driver.decision(cmd.TryAlgorithm(description="other words", impl_digest="d2", override="why"))


# --- start from the best -------------------------------------------------------------------------


def test_after_a_rollback_the_implementation_must_be_the_best_again(cli: Cli) -> None:
    frontend(cli)
    attempt = cli.ok("try", OP, "--set", "stitch=64")["attempt"]
    cli.ok("verify", OP, str(attempt), "--output", "y=true", "--layout-exit", "0",
           "--time", "150us")  # fmt: skip
    impl = cli.root / "custom" / OP / f"{OP}_impl.py"
    original, best = impl.read_text("utf-8"), file_digest(impl)[:12]
    impl.write_text(original + "# edited\n", "utf-8")
    out = refused(cli, 3, "try", OP, "--set", "stitch=32")
    now = file_digest(impl)[:12]
    where = f"custom/{OP}/{OP}_impl.py"
    assert (out["rule"], out["error"], out["blocking"], out["next"]) == (
        "R6",
        "a new attempt starts from the best: the implementation on disk is not the best's",
        f"{where} has digest {now}, the best was measured with {best}",
        f"restore {where} to implementation {best} (tune-ledger kernel restore {OP} when the "
        f"ledger kept it, or `git restore {where}`), then run the command again",
    )
    impl.write_text(original, "utf-8")
    cli.ok("try", OP, "--set", "stitch=32")
