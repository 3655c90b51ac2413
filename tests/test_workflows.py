"""The measuring workflows are library calls (ledger/shell/workflows.py): an op with a manifest is
activated, given its target sheet and measured through `OpLedger` alone, no CLI, and a retried
idempotency key returns the original result without running the verifier again."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from ledger.errors import BadInput, StoppedRefusal
from ledger.shell.api import OpLedger
from ledger.shell.workflows import Invocation
from stages import commands as cmd

OP = "sm"
# A verifier that keeps the manifest's contract and counts its runs in runs.log.
VERIFIER = """
    import hashlib, json, pathlib, sys
    op_dir, config = pathlib.Path(sys.argv[1]), json.loads(sys.argv[2])
    with open(op_dir / "runs.log", "a") as log:
        log.write(json.dumps(config) + "\\n")
    digest = hashlib.sha256((op_dir / "sm_impl.py").read_bytes()).hexdigest()
    time_us = 80.0 if config["vec_tile_shape"] == [1, 8, 1, 64] else 60.0
    print(json.dumps({"config": config, "impl_digest": digest, "tool": "fake-sim",
                      "times_us": [time_us], "layout_exit": 0,
                      "outputs": [{"name": "y", "all_close": True, "max_diff": 0.0}]}))
"""
LAYOUT_CHECK = "import sys\nsys.exit(0)\n"


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> OpLedger:
    """An initialized op whose SPEC.md declares a verifier, with runs counted (no cache)."""
    monkeypatch.setenv("TUNE_LEDGER_MEASURE_CACHE", "off")
    folder = tmp_path / "custom" / OP
    folder.mkdir(parents=True)
    (folder / "sm_impl.py").write_text("def kernel(x):\n    return x\n", "utf-8")
    (folder / "layout_check.py").write_text(LAYOUT_CHECK, "utf-8")
    (tmp_path / "verifier.py").write_text(textwrap.dedent(VERIFIER), "utf-8")
    command = [sys.executable, str(tmp_path / "verifier.py"), "{op_dir}", "{config}"]
    (folder / "SPEC.md").write_text(
        "---\n"
        "p0_shapes: [[32, 32, 1, 256]]\n"
        "perf_target: {time_us: 50.0, metric: max_work_time_us}\n"
        "baseline_config: {vec_tile_shape: [1, 8, 1, 64]}\n"
        "knobs:\n"
        "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n"
        f"verifier: {{command: {json.dumps(command)}, timeout_s: 60}}\n"
        "---\n# sm\n",
        "utf-8",
    )
    opened = OpLedger(tmp_path, OP)
    opened.execute(cmd.Init(op=OP))
    return opened


def _runs(ledger: OpLedger) -> int:
    log = ledger.dir / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _to_the_first_attempt(ledger: OpLedger) -> None:
    compare = ledger.evidence_from_spec("compare")
    layout = ledger.evidence_from_spec("layout")
    for outcome in (compare, layout):
        event = outcome.events[-1]
        assert event.data["origin"]["level"] == "measured"
        assert event.data["impl_path"] == f"custom/{OP}/sm_impl.py"  # relative to the root
    digest = compare.events[-1].data["impl_digest"]
    ledger.execute(cmd.Activate(impl_digest=digest))
    sheet = ledger.target_from_spec().events[-1].data
    assert (sheet["baseline_us"], sheet["target_us"], sheet["target_source"]) == (80, 50, "spec")
    for step in (
        cmd.LoadSkill(name="pypto-op-perf-tune"),
        cmd.EnterStage(stage="frontend"),
        cmd.LoadSkill(name="tune-frontend"),
        cmd.OpenPoint(name="vec_tile_shape"),
        cmd.TryMutation(param="vec_tile_shape", value=[1, 16, 1, 64]),
    ):
        ledger.execute(step)


def test_an_op_is_activated_sheeted_and_measured_through_the_api_alone(ledger: OpLedger) -> None:
    """Evidence, the target sheet and a measure, each a run of the op's own commands."""
    _to_the_first_attempt(ledger)
    assert _runs(ledger) == 2  # the compare and the baseline; the layout check is its own
    outcome = ledger.measure()
    verified = next(e.data for e in outcome.events if e.type == "attempt.measured")
    assert next(e.data for e in outcome.events if e.type == "attempt.verdict")["verdict"] == "adopt"
    assert verified["origin"]["level"] == "measured"
    assert verified["origin"]["command"].endswith(""" '{"vec_tile_shape":[1,16,1,64]}'""")
    state = ledger.load().state
    assert state.best is not None and state.best.time_us == 60.0
    assert _runs(ledger) == 3


def test_a_retried_key_returns_the_original_result_without_running_again(
    ledger: OpLedger,
) -> None:
    """The key is looked up before the verifier runs (DESIGN §5)."""
    _to_the_first_attempt(ledger)
    first = ledger.measure(invocation=Invocation(key="measure-1"))
    runs = _runs(ledger)
    again = ledger.measure(invocation=Invocation(key="measure-1"))
    assert again.replayed and [e.id for e in again.events] == [e.id for e in first.events]
    assert _runs(ledger) == runs
    with pytest.raises(BadInput, match="different command"):
        ledger.target_from_spec(invocation=Invocation(key="measure-1"))


def test_refusals_come_before_anything_runs(ledger: OpLedger) -> None:
    """Nothing pending: bad input; after a stop: the stop's refusal; neither runs the verifier."""
    _to_the_first_attempt(ledger)
    ledger.measure()
    runs = _runs(ledger)
    with pytest.raises(BadInput, match="no attempt is pending"):
        ledger.measure()
    ledger.execute(cmd.Stop(reason="enough"))
    with pytest.raises(StoppedRefusal):
        ledger.measure("pending")
    with pytest.raises(BadInput, match="unknown evidence"):
        ledger.evidence_from_spec("timing")  # type: ignore[arg-type]
    assert _runs(ledger) == runs
