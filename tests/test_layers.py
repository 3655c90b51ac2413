"""The layer contracts of pyproject.toml hold on this tree and fail on an upward import."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH first, so the copied packages are analysed, not the installed ones.
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _copy(tmp_path: Path) -> Path:
    for package in ("ledger", "stages", "tools"):
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_layers_are_kept(tmp_path: Path) -> None:
    """Every contract is kept on the tree as it is."""
    result = _lint_imports(_copy(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


def test_an_upward_import_breaks_the_build(tmp_path: Path) -> None:
    """The log importing the stage machines (a layer above it) is reported as broken."""
    tree = _copy(tmp_path)
    codec = tree / "ledger" / "log" / "codec.py"
    codec.write_text(codec.read_text("utf-8") + "\nimport stages.verdict  # noqa\n", "utf-8")
    result = _lint_imports(tree)
    assert result.returncode != 0
    assert "ledger.log.codec -> stages.verdict" in result.stdout


def test_the_core_importing_tools_breaks_the_build(tmp_path: Path) -> None:
    """A stage machine importing the PyPTO adapter (tools/) is reported as broken."""
    tree = _copy(tmp_path)
    target = tree / "stages" / "target.py"
    target.write_text(target.read_text("utf-8") + "\nimport tools.pypto.metrics  # noqa\n", "utf-8")
    result = _lint_imports(tree)
    assert result.returncode != 0
    assert "stages.target -> tools.pypto.metrics" in result.stdout
