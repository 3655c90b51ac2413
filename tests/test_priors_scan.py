"""Scanning PyPTO kernel sources with `ast`: literal configs with file:line, the rest reported."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ledger.priors.scan import scan_paths, scan_source
from ledger.priors.scan_result import KernelValue, ScanResult

KERNELS = Path(__file__).parent / "data" / "kernels"


def _scan(name: str) -> ScanResult:
    return scan_paths([KERNELS / name])


def _values(result: ScanResult) -> list[tuple[int, dict[str, object]]]:
    return [(f.line, f.values) for f in result.findings]


def _one(result: ScanResult, line: int) -> KernelValue:
    found = [f for f in result.findings if f.line == line]
    assert len(found) == 1, result.findings
    return found[0]


def test_decorator_options_tiles_and_nested_loops_are_read_with_their_lines() -> None:
    result = _scan("rms_norm_kernel.py")
    assert _values(result) == [
        (
            8,
            {
                "stitch_function_max_num": 64,
                "device_sched_mode": 1,
                "vec_nbuffer_setting": {"-1": 2},
            },
        ),
        (17, {"vec_tile_shape": [1, 16, 64]}),
        (19, {"unroll_list": [8, 4, 2, 1]}),
        (21, {"unroll_list": [4, 1]}),
    ]
    assert {f.scope for f in result.findings} == {"rms_norm_kernel"}
    assert _one(result, 21).call == "pypto.loop"
    assert _one(result, 19).where.endswith("rms_norm_kernel.py:19")


def test_a_non_literal_run_mode_is_not_reported_as_a_skipped_knob() -> None:
    assert _scan("rms_norm_kernel.py").skipped == ()


def test_cube_tiles_keep_their_keyword_arguments_and_pass_options_become_string_keyed() -> None:
    result = _scan("matmul_kernel.py")
    cube = _one(result, 9)
    assert cube.values == {
        "cube_tile_shape": [[128, 128], [64, 256], [256, 256]],
        "enable_split_k": False,
    }
    assert cube.call == "set_cube_tile_shapes"  # imported by name from pypto
    assert _one(result, 10).values == {
        "cube_l1_reuse_setting": {"-1": 4},
        "cube_nbuffer_setting": {"-1": 2},
    }
    assert _one(result, 7).values == {"stitch_function_max_num": 256}


def test_values_computed_at_run_time_are_skipped_with_file_line_and_reason() -> None:
    result = _scan("matmul_kernel.py")
    skipped = {(s.line, s.call): s.reason for s in result.skipped}
    assert set(skipped) == {
        (17, "frontend.jit"),
        (19, "set_cube_tile_shapes"),
        (20, "set_pass_options"),
    }
    assert (
        "`dict(stitch_function_max_num=m)` is not a literal dict" in skipped[(17, "frontend.jit")]
    )
    assert "`[m, m]` is not a literal" in skipped[(19, "set_cube_tile_shapes")]
    assert "sg_set_scope=" in skipped[(20, "set_pass_options")]
    # Nothing of the non-literal kernel is taken as a finding.
    assert all(f.scope == "matmul_big" for f in result.findings)


def test_module_constants_bound_once_are_followed_and_named_in_the_provenance() -> None:
    result = _scan("layer_norm_kernel.py")
    tile = _one(result, 17)
    assert tile.values == {"vec_tile_shape": [1, 8, 64]}
    assert tile.via == (f"TILE ({KERNELS / 'layer_norm_kernel.py'}:6)",)
    assert _one(result, 21).values == {"unroll_list": [16, 4, 1]}
    assert _one(result, 21).scope == "LayerNorm.kernel.body"
    # A module-level options dict counts entry by entry, around its non-literal run_mode.
    jit = _one(result, 26)
    assert jit.values == {"stitch_function_num_initial": 32, "sg_set_scope": 1}
    assert _one(result, 28).values == {"vec_tile_shape": [1, 4, 32]}  # *[literal list]


def test_a_rebound_name_or_a_call_is_not_a_literal() -> None:
    result = _scan("layer_norm_kernel.py")
    reasons = {s.line: s.reason for s in result.skipped}
    assert "`rows` is not a literal" in reasons[20]
    assert "**RUNTIME" in reasons[26]
    assert "sorted([2, 1], reverse=True)" in reasons[29]
    source = textwrap.dedent("""
        import pypto
        LIMIT = 64
        LIMIT = 128
        pypto.set_vec_tile_shapes(1, 8, LIMIT)
    """)
    rebound = scan_source(source, "k.py")
    assert rebound.findings == ()
    assert [s.line for s in rebound.skipped] == [5]


def test_two_tiles_in_one_function_are_two_findings() -> None:
    result = _scan("two_phase_kernel.py")
    assert [f.values for f in result.findings if "vec_tile_shape" in f.values] == [
        {"vec_tile_shape": [1, 32, 1, 64]},
        {"vec_tile_shape": [1, 16, 1, 32]},
    ]


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("def kernel(:\n    pass\n", 1),
        ("import pypto\n\nif True:\npypto.set_vec_tile_shapes(1, 2)\n", 4),
        ("x = 'unterminated\n", 1),
    ],
)
def test_a_file_that_does_not_parse_is_reported_and_skipped(source: str, line: int) -> None:
    result = scan_source(source, "broken.py")
    assert result.findings == () and result.files == 1
    assert [(e.path, e.line) for e in result.errors] == [("broken.py", line)]
    assert "does not parse" in result.errors[0].reason


def test_broken_and_undecodable_files_never_stop_the_scan(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text("import pypto\npypto.set_vec_tile_shapes(1, 8)\n", "utf-8")
    (tmp_path / "bad.py").write_text("def (:\n", "utf-8")
    (tmp_path / "latin.py").write_bytes(b"x = '\xff'\n")
    (tmp_path / "nul.py").write_bytes(b"x = 1\x00\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "skip.py").write_text("pypto.set_vec_tile_shapes(9)\n", "utf-8")
    result = scan_paths([tmp_path, tmp_path / "missing"])
    assert [f.values for f in result.findings] == [{"vec_tile_shape": [1, 8]}]
    assert result.files == 4
    errors = {Path(e.path).name: e.reason for e in result.errors}
    assert set(errors) == {"bad.py", "latin.py", "nul.py", "missing"}
    assert errors["missing"] == "does not exist"


def test_keyword_arguments_positional_dicts_and_non_json_values() -> None:
    source = textwrap.dedent("""
        import pypto
        from pypto import frontend

        def k():
            pypto.set_pass_options({"vec_nbuffer_setting": {-1: 3}}, sg_set_scope=2)
            pypto.set_vec_tile_shapes(1, 8.0)
            pypto.set_vec_tile_shapes()
            pypto.set_cube_tile_shapes([16, 16], [16, 256])
            for i in pypto.loop(0, 8, 1):
                pass
            for i in loop_unroll(0, 8, 1, unroll_list={4, 1}):
                pass
            frontend.jit(runtime_options={1: 2, "device_sched_mode": 2})
            other.jit(runtime_options=None)
    """)
    result = scan_source(source, "k.py")
    assert _values(result) == [
        (6, {"vec_nbuffer_setting": {"-1": 3}, "sg_set_scope": 2}),
        (14, {"device_sched_mode": 2}),
    ]
    reasons = [(s.line, s.reason) for s in result.skipped]
    assert reasons[0] == (7, "vec tile shape not read: argument 2 is 8.0, not an int")
    assert reasons[1] == (8, "vec tile shape not read: no arguments")
    assert reasons[2][0] == 9 and "2 positional arguments" in reasons[2][1]
    assert reasons[3][0] == 12 and "set" in reasons[3][1]  # a set literal is not JSON
    assert reasons[4][0] == 14 and "not a literal string key" in reasons[4][1]
    assert reasons[5][0] == 15 and "None is not a dict" in reasons[5][1]
