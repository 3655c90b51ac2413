"""`evidence compare|layout --from-spec`: the ledger runs the op folder's own checks on SPEC.md's
baseline config and records what they found, measured and bound (R1, R11), so an agent onboards
an op with a manifest without composing a verifier command."""

from __future__ import annotations

import json
import shlex
import sys
import textwrap

import pytest
from cli_harness import OP, Cli, new_op, snapshot

# A fake verifier that keeps the manifest's contract: it names the config it ran and the
# kernel's digest, and reports the compare of each output. Its first argument picks a lie.
VERIFIER = """
    import hashlib, json, pathlib, sys
    mode, op_dir, config = sys.argv[1], pathlib.Path(sys.argv[2]), json.loads(sys.argv[3])
    digest = hashlib.sha256((op_dir / "sm_impl.py").read_bytes()).hexdigest()
    doc = {"config": config, "impl_digest": digest, "tool": "fake-sim", "times_us": [80.0],
           "outputs": [{"name": "y", "all_close": mode != "wrong", "max_diff": 0.5}]}
    if mode == "other-kernel":
        doc["impl_digest"] = "0" * 64
    if mode == "no-build":
        del doc["outputs"]
        doc.update(times_us=[], failure={"category": "compile", "detail": "UB overflow"})
    print(json.dumps(doc))
"""
# The op's layout check, as docs/OP_FOLDER.md calls it; it exits with the code in LAYOUT_EXIT.
LAYOUT_CHECK = """
    import json, pathlib, sys
    pathlib.Path(sys.argv[0]).with_name("layout_args.json").write_text(json.dumps(sys.argv[1:]))
    sys.exit(int(pathlib.Path(sys.argv[0]).with_name("LAYOUT_EXIT").read_text()))
"""
BASELINE = {"vec_tile_shape": [1, 8, 1, 64]}


def _op_with_manifest(cli: Cli, mode: str = "ok", layout_exit: int = 0) -> None:
    new_op(cli)
    folder = cli.root / "custom" / OP
    (cli.root / "verifier.py").write_text(textwrap.dedent(VERIFIER), "utf-8")
    (folder / "layout_check.py").write_text(textwrap.dedent(LAYOUT_CHECK), "utf-8")
    (folder / "LAYOUT_EXIT").write_text(str(layout_exit), "utf-8")
    command = [sys.executable, str(cli.root / "verifier.py"), mode, "{op_dir}", "{config}"]
    (folder / "SPEC.md").write_text(
        "---\n"
        "p0_shapes: [[32, 32, 1, 256]]\n"
        "perf_target: {time_us: 50.0, metric: max_work_time_us}\n"
        f"baseline_config: {json.dumps(BASELINE)}\n"
        "knobs:\n"
        "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n"
        f"verifier: {{command: {json.dumps(command)}, timeout_s: 60}}\n"
        "---\n# sm\n",
        "utf-8",
    )


def _payload(cli: Cli, kind: str) -> dict:
    return next(e["payload"] for e in cli.events() if e["type"] == kind)


def test_both_checks_run_from_the_op_folder_are_recorded_measured_and_open_tuning(
    cli: Cli,
) -> None:
    _op_with_manifest(cli)
    resumed = cli.ok("resume", OP)
    assert f"tune-ledger evidence compare {OP} --from-spec" in " ".join(resumed["next"])
    assert cli.ok("evidence", "compare", OP, "--from-spec")["passed"] is True
    compare = _payload(cli, "evidence.compare")
    assert compare["outputs"] == [{"name": "y", "all_close": True, "max_diff": 0.5}]
    assert compare["origin"]["level"] == "measured"
    assert compare["origin"]["tool"] == "fake-sim"
    assert json.loads(shlex.split(compare["origin"]["command"])[-1]) == BASELINE

    assert cli.ok("evidence", "layout", OP, "--from-spec")["passed"] is True
    layout = _payload(cli, "evidence.layout")
    assert layout["exit_code"] == 0 and layout["origin"]["level"] == "measured"
    args = json.loads((cli.root / "custom" / OP / "layout_args.json").read_text())
    assert args == ["--config", json.dumps(BASELINE, separators=(",", ":")), "--before-tuning"]
    cli.ok("activate", OP)


def test_failing_checks_are_recorded_as_they_are_and_activation_hands_back(cli: Cli) -> None:
    """A compare that is not all_close and a layout check exiting 3 are evidence too (R1)."""
    _op_with_manifest(cli, mode="wrong", layout_exit=3)
    assert cli.ok("evidence", "compare", OP, "--from-spec")["passed"] is False
    assert cli.ok("evidence", "layout", OP, "--from-spec")["exit_code"] == 3
    assert cli("activate", OP).code == 5


@pytest.mark.parametrize(
    ("mode", "code", "rule", "says"),
    [
        ("other-kernel", 2, "R11", "implementation"),
        ("no-build", 2, "R1", "did not run"),
    ],
)
def test_a_run_that_cannot_be_evidence_writes_nothing(
    cli: Cli, mode: str, code: int, rule: str, says: str
) -> None:
    _op_with_manifest(cli, mode=mode)
    before = snapshot(cli.root)
    refused = cli("evidence", "compare", OP, "--from-spec")
    assert refused.code == code, refused
    assert refused.json["rule"] == rule and says in refused.json["error"], refused.json
    assert refused.json["next"]
    assert snapshot(cli.root) == before


def test_without_a_verifier_the_refusal_says_what_to_declare_or_give(cli: Cli) -> None:
    new_op(cli)
    before = snapshot(cli.root)
    for check in ("compare", "layout"):
        refused = cli("evidence", check, OP, "--from-spec")
        assert refused.code == 2 and refused.json["rule"] == "R11", refused.json
        assert "verifier" in refused.json["error"] and "--run" in refused.json["next"]
    assert snapshot(cli.root) == before


def test_one_source_at_a_time(cli: Cli) -> None:
    _op_with_manifest(cli)
    before = snapshot(cli.root)
    both = cli("evidence", "compare", OP, "--from-spec", "--output", "y=true")
    assert both.code == 2 and "only one" in both.json["error"]
    both = cli("evidence", "layout", OP, "--from-spec", "--exit-code", "0")
    assert both.code == 2 and "exactly one" in both.json["error"]
    assert snapshot(cli.root) == before
