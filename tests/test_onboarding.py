"""`new-op` writes an op folder that follows docs/OP_FOLDER.md; `check-op` names each break."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import run_main

REPO = Path(__file__).resolve().parents[1]


def _new(root: Path, op: str = "scaled") -> Path:
    result = run_main(["--root", str(root), "--json", "new-op", op])
    assert result.code == 0, result.stdout
    return root / "custom" / op


def _check(root: Path, op: str = "scaled", *extra: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = run_main(["--root", str(root), "--json", "check-op", op, "--static", *extra])
    return result.code, json.loads(result.stdout)


def test_new_op_writes_the_four_files_named_after_the_op(tmp_path: Path) -> None:
    """The scaffold writes SPEC.md, impl, golden and layout check, each naming the op."""
    op_dir = _new(tmp_path)
    names = sorted(p.name for p in op_dir.iterdir())
    assert names == ["SPEC.md", "layout_check.py", "scaled_golden.py", "scaled_impl.py"]
    assert "op_name: scaled" in (op_dir / "SPEC.md").read_text()
    assert "def scaled_kernel(" in (op_dir / "scaled_impl.py").read_text()
    assert "softmax" not in "".join(p.read_text() for p in op_dir.iterdir())


def test_the_scaffold_and_the_bundled_op_follow_the_contract(tmp_path: Path) -> None:
    """check-op passes on a fresh scaffold and on custom/softmax (exit 0, no violation)."""
    _new(tmp_path)
    assert _check(tmp_path) == (0, {"op": "scaled", "violations": []})
    assert _check(REPO, "softmax")[0] == 0


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda d: (d / "scaled_golden.py").unlink(), "scaled_golden.py: missing"),
        (
            lambda d: (d / "scaled_impl.py").write_text(
                (d / "scaled_impl.py").read_text().replace("DTYPES =", "TYPES =")
            ),
            "scaled_impl.py: does not define DTYPES",
        ),
        (
            lambda d: (d / "SPEC.md").write_text(
                (d / "SPEC.md").read_text().replace("op_name: scaled", "op_name: other")
            ),
            "op_name is 'other', the folder is 'scaled'",
        ),
        (
            lambda d: (d / "SPEC.md").write_text(
                (d / "SPEC.md").read_text().replace("p0_shapes: [[16, 16, 1, 128]]\n", "")
            ),
            "declares no p0_shapes",
        ),
    ],
)
def test_each_violation_is_named_with_its_file_and_fix(tmp_path: Path, edit, named: str) -> None:  # type: ignore[no-untyped-def]
    """A broken folder exits 2 and the message names the file, the problem and a fix."""
    edit(_new(tmp_path))
    code, doc = _check(tmp_path)
    assert code == 2 and named in doc["error"] and "(fix: " in doc["error"], doc


def test_a_failing_layout_rule_is_a_violation(tmp_path: Path) -> None:
    """Without --static, check-op runs the layout check; a failing rule is named (exit 2)."""
    op_dir = _new(tmp_path)
    impl = op_dir / "scaled_impl.py"
    impl.write_text("from __future__ import annotations\n" + impl.read_text())
    result = run_main(["--root", str(tmp_path), "--json", "check-op", "scaled"])
    assert result.code == 2 and "FAIL LC9" in json.loads(result.stdout)["error"]


@pytest.mark.parametrize("name", ["Bad-Name", "1op", "a/b"])
def test_new_op_refuses_a_bad_name_and_writes_nothing(tmp_path: Path, name: str) -> None:
    """A name that is not a lowercase identifier is bad input (exit 2), nothing written."""
    result = run_main(["--root", str(tmp_path), "new-op", name])
    assert result.code == 2
    assert not (tmp_path / "custom").exists()


def test_new_op_never_overwrites_a_folder(tmp_path: Path) -> None:
    """An existing op folder is refused (exit 2) and left as it was."""
    op_dir = _new(tmp_path)
    (op_dir / "SPEC.md").write_text("mine")
    assert run_main(["--root", str(tmp_path), "new-op", "scaled"]).code == 2
    assert (op_dir / "SPEC.md").read_text() == "mine"
