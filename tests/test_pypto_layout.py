"""The softmax op's layout check: each rule catches its own violation (no pypto needed)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

OP = Path(__file__).resolve().parents[1] / "custom" / "softmax"
IMPL = (OP / "softmax_impl.py").read_text()


def _layout_check():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("_softmax_layout_check", OP / "layout_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(tmp_path: Path, source: str, *args: str) -> tuple[int, str]:
    impl = tmp_path / "softmax_impl.py"
    impl.write_text(source)
    check = _layout_check()
    findings = check.check(
        impl, OP / "SPEC.md", json.loads(args[0]) if args else {}, "--before-tuning" in args
    )
    return (1 if findings.failed else 0), "\n".join(findings.lines)


def test_the_shipped_kernel_passes(capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped kernel and its default config pass every rule (exit 0)."""
    assert _layout_check().main([]) == 0
    assert "0 failing rule(s)" in capsys.readouterr().out


OUTER_UNROLL = IMPL.replace(
    "        for b, rows in pypto.loop_unroll(0, batch, 1, unroll_list=unroll):\n",
    "        for b, rows in pypto.loop_unroll(0, batch, 1, unroll_list=unroll):\n"
    "          for _ in pypto.loop(1):\n",
)


@pytest.mark.parametrize(
    ("source", "args", "rule"),
    [
        (OUTER_UNROLL.replace("\n            ", "\n              "), (), "FAIL LC3"),
        (
            IMPL.replace("x[b:b + rows, :, :, :]", "x[b:b + 1, :, :, :]").replace(
                "y[b:b + rows, :, :, :]", "y[b:b + 1, :, :, :]"
            ),
            (),
            "FAIL LC4",
        ),
        (IMPL.replace("unroll_list=unroll)", "unroll_list=[1, 4])"), (), "FAIL LC5"),
        (IMPL, ('{"unroll_list": [4, 1]}', "--before-tuning"), "FAIL LC5"),
        (IMPL, ('{"vec_tile_shape": [1, 8, 64]}',), "FAIL LC6"),
        (
            IMPL.replace("y: pypto.Tensor(dims, elem)", "y: pypto.Tensor(dims, pypto.DT_FP16)"),
            (),
            "FAIL LC7",
        ),
        ("from __future__ import annotations\n" + IMPL, (), "FAIL LC9"),
        (
            IMPL.replace(
                "        pypto.set_vec_tile_shapes(*tile)\n",
                "        pypto.set_cube_tile_shapes([m, m], [k, k], [n, n])\n"
                "        pypto.set_vec_tile_shapes(*tile)\n",
            ),
            (),
            "FAIL LC1",
        ),
    ],
)
def test_each_rule_catches_its_violation(
    tmp_path: Path, source: str, args: tuple[str, ...], rule: str
) -> None:
    """A kernel or config that breaks one rule exits 1 with that rule's finding."""
    code, text = run(tmp_path, source, *args)
    assert code == 1 and rule in text, text
