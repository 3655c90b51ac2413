"""A third op made with `new-op` is tuned through the CLI with only its kernel body and its
manifest changed: activation, the target sheet from SPEC.md and measured attempts (real PyPTO)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger.shell.api import OpLedger
from ledger.shell.audit import audit_op

pytest.importorskip("pypto")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
OP = "twice"


def tune_ledger(root: Path, *args: str, code: int = 0) -> dict[str, Any]:
    """One `tune-ledger --json` command as a process in `root`; its JSON output."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "ledger", "--root", str(root), "--json", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == code, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_scaffolded_op_is_activated_and_measured_without_tool_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """new-op, edit the kernel body and the manifest, then the protocol through the CLI."""
    tune_ledger(tmp_path, "new-op", OP)
    op_dir = tmp_path / "custom" / OP
    impl = op_dir / f"{OP}_impl.py"
    body = "pypto.add(block, block)"
    assert body in impl.read_text()
    # Same result (2x), another body: x + (x + x) - x.
    impl.write_text(
        impl.read_text().replace(
            body, "pypto.sub(pypto.add(block, pypto.add(block, block)), block)"
        )
    )
    spec = op_dir / "SPEC.md"
    text = spec.read_text()
    for old, new in (
        ("p0_shapes: [[16, 16, 1, 128]]", "p0_shapes: [[8, 16, 1, 128]]"),
        ('"time_us": 2.0', '"time_us": 1.0'),
        ('"--verify-passes", "last"', '"--verify-passes", "graph"'),
    ):
        assert old in text
        text = text.replace(old, new)
    spec.write_text(text)
    assert tune_ledger(tmp_path, "check-op", OP)["violations"] == []

    tune_ledger(tmp_path, "init", OP)
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the verifier's runs inherit it
    # SPEC.md declares the verifier: only its own runs activate (issue 27; --run is refused).
    tune_ledger(tmp_path, "evidence", "compare", OP, "--from-spec")
    tune_ledger(tmp_path, "evidence", "layout", OP, "--from-spec")
    tune_ledger(tmp_path, "activate", OP)
    sheet = tune_ledger(tmp_path, "target", OP, "--from-spec")
    assert sheet["target_us"] == 1.0 and sheet["baseline_us"] > 1.0
    for skill in ("pypto-op-perf-tune", "perf-analyzer"):
        tune_ledger(tmp_path, "skill", "load", OP, skill)
    tune_ledger(tmp_path, "stage", "enter", OP, "frontend")
    tune_ledger(tmp_path, "skill", "load", OP, "tune-frontend")
    tune_ledger(tmp_path, "point", "open", OP, "vec_tile_shape")
    verdicts = []
    for tile in ("[1,8,1,64]", "[1,16,1,64]"):
        tune_ledger(tmp_path, "try", OP, "--set", f"vec_tile_shape={tile}")
        verdicts.append(tune_ledger(tmp_path, "measure", OP)["verdict"])
    assert verdicts[0] == "adopt", verdicts  # bigger tiles: fewer tasks, faster in the simulator

    ledger = OpLedger(tmp_path, OP)
    state = ledger.load().state
    assert state.best is not None and state.best.time_us < sheet["baseline_us"]
    assert all(a.measurement is not None for a in state.attempts.values())
    assert {a.measurement.origin_level for a in state.attempts.values() if a.measurement} == {
        "measured"
    }
    assert audit_op(ledger)["findings"] == []
