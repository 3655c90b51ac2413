"""Each rule of the generic layout check passes a small kernel that keeps it and fails one
that breaks it (tools/pypto/lint_rules.py; pure: no pypto, no torch)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from tools.pypto import lint_rules as rules

GOOD = """
import pypto

INPUT_NAMES = ("a", "b")
OUTPUT_NAMES = ("c",)
DTYPES = {"fp16": pypto.DT_FP16}


def build_kernel(shape, dtype, config, *, verify_options=None):
    cube = config["cube_tile_shape"]
    tile = config["vec_tile_shape"]
    unroll = config["unroll_list"]

    @pypto.frontend.jit(runtime_options={})
    def kernel(a: pypto.Tensor(dims, elem), b: pypto.Tensor(dims, elem),
               c: pypto.Tensor(dims, elem)):
        pypto.set_cube_tile_shapes(*cube)
        pypto.set_vec_tile_shapes(*tile)
        for i, rows in pypto.loop_unroll(0, 8, 1, unroll_list=unroll):
            c[i:i + rows, :] = pypto.matmul(a[i:i + rows, :], b)

    return kernel
"""


def findings(source: str, before_tuning: bool = False) -> list[str]:
    """The finding lines of the static rules on `source`."""
    tree = ast.parse(textwrap.dedent(source))
    out = rules.Findings("k.py")
    (kernel,) = rules.kernels(tree)
    rules.check_cube_tiles(tree, kernel, out)
    rules.check_vec_tile(kernel, out)
    rules.check_unroll(kernel, out, before_tuning)
    rules.check_signature(tree, kernel, out)
    rules.check_annotations(tree, out)
    return out.lines


def statuses(source: str, rule: str, before_tuning: bool = False) -> set[str]:
    """The statuses (PASS, FAIL, N/A) the rule gave on `source`."""
    return {line.split()[0] for line in findings(source, before_tuning) if f" {rule} " in line}


def test_the_good_kernel_passes_every_static_rule() -> None:
    """A matmul kernel with config-driven tiles and an innermost unroll fails nothing."""
    assert not [line for line in findings(GOOD) if line.startswith("FAIL")]


@pytest.mark.parametrize(
    ("rule", "old", "new"),
    [
        ("LC1", "set_cube_tile_shapes(*cube)", "set_cube_tile_shapes([m, m], [k, k], [n, n])"),
        ("LC1", "set_cube_tile_shapes(*cube)", "set_cube_tile_shapes([i, 1], [1, 1], [1, 1])"),
        ("LC2", "pypto.set_vec_tile_shapes(*tile)", "pypto.set_vec_tile_shapes(tile[0] * 2)"),
        (
            "LC3",
            "            c[i:i + rows, :] =",
            "            for j in pypto.loop(2):\n                c[i:i + rows, :] =",
        ),
        (
            "LC3",
            "        for i, rows in",
            "        steps = pypto.loop_unroll(0, 8, 1, unroll_list=[1])\n        for i, rows in",
        ),
        (
            "LC4",
            "c[i:i + rows, :] = pypto.matmul(a[i:i + rows, :], b)",
            "c[i:i + 1, :] = pypto.matmul(a[i:i + 1, :], b)",
        ),
        (
            "LC7",
            "def kernel(a: pypto.Tensor(dims, elem), b:",
            "def kernel(b: pypto.Tensor(dims, elem), a:",
        ),
        ("LC7", "c: pypto.Tensor(dims, elem)", "c"),
        ("LC9", "import pypto\n", "from __future__ import annotations\nimport pypto\n"),
    ],
)
def test_each_rule_fails_the_kernel_that_breaks_it(rule: str, old: str, new: str) -> None:
    """Breaking one rule makes that rule fail, where the good kernel passed it."""
    assert "PASS" in statuses(GOOD, rule)
    assert old in GOOD
    broken = GOOD.replace(old, new)
    assert "FAIL" in statuses(broken, rule), findings(broken)


def test_literal_cube_tiles_pass_and_a_missing_one_is_not_applicable() -> None:
    """LC1 takes literal int lists; a vector-only kernel has nothing to check."""
    literal = GOOD.replace("(*cube)", "([64, 64], [64, 64], [128, 128])")
    assert statuses(literal, "LC1") == {"PASS"}
    vector_only = GOOD.replace("        pypto.set_cube_tile_shapes(*cube)\n", "")
    assert statuses(vector_only, "LC1") == {"N/A"}


def test_a_literal_unroll_list_must_be_single_valued_before_tuning() -> None:
    """LC5: [4, 2, 1] is a fine unroll list while tuning, not at activation."""
    listed = GOOD.replace("unroll_list=unroll", "unroll_list=[4, 2, 1]")
    assert statuses(listed, "LC5") == {"PASS"}
    assert statuses(listed, "LC5", before_tuning=True) == {"FAIL"}
    assert statuses(GOOD.replace("unroll_list=unroll", "unroll_list=[1, 4]"), "LC5") == {"FAIL"}


@pytest.mark.parametrize(
    ("config", "status"),
    [
        ({}, "PASS"),
        ({"vec_tile_shape": [16, 128]}, "PASS"),
        ({"vec_tile_shape": [16, 128, 1]}, "FAIL"),
        ({"cube_tile_shape": [[64, 64], [64, 64], [128, 128]]}, "PASS"),
        ({"cube_tile_shape": [[64, 64], [64, 64]]}, "FAIL"),
        ({"cube_tile_shape": [[64, 0], [64, 64], [128, 128]]}, "FAIL"),
    ],
)
def test_the_config_tiles_are_checked_against_the_defaults(config: dict, status: str) -> None:  # type: ignore[type-arg]
    """LC6: the vec tile keeps the default's rank; a cube tile is three pairs of positive ints."""
    defaults = {"vec_tile_shape": [32, 64], "cube_tile_shape": [[32, 32], [32, 32], [32, 32]]}
    out = rules.Findings("k.py")
    rules.check_config(config, defaults, out, before_tuning=False)
    lc6 = {line.split()[0] for line in out.lines if " LC6 " in line}
    assert status in lc6 and (status == "FAIL" or lc6 == {"PASS"})


def test_config_unroll_lists_follow_lc5() -> None:
    """LC5 on the config: a multi-valued list passes while tuning and fails before it."""
    for before, expected in ((False, {"PASS"}), (True, {"FAIL"})):
        out = rules.Findings("k.py")
        rules.check_config({"unroll_list": [2, 1]}, {"unroll_list": [1]}, out, before)
        assert {line.split()[0] for line in out.lines if " LC5 " in line} == expected


def test_kernels_are_found_by_their_jit_decorator() -> None:
    """LC0's count: only functions decorated with a `jit` are kernels."""
    tree = ast.parse(textwrap.dedent(GOOD))
    assert [k.name for k in rules.kernels(tree)] == ["kernel"]
    assert rules.literal_dtypes(rules.kernels(tree)[0]) == {}
    typed = ast.parse(
        GOOD.replace("c: pypto.Tensor(dims, elem)", "c: pypto.Tensor(dims, pypto.DT_FP32)")
    )
    assert rules.literal_dtypes(rules.kernels(typed)[0]) == {"c": "fp32"}
