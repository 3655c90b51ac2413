"""Accuracy and performance from separate runs: `verify --output ... --layout-exit N --perf-dir
DIR`, each piece with its own provenance (R11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import OP, Cli, pending, snapshot

REPO = Path(__file__).resolve().parents[1]


def test_hand_given_accuracy_beside_a_perf_folder(cli: Cli) -> None:
    """Times come from DIR/measurement.json (artefact), outputs from the command (reported)."""
    attempt = pending(cli)
    folder = cli.root / "perf"
    folder.mkdir()
    (folder / "measurement.json").write_text(json.dumps({"times_us": [90.0], "tool": "sim"}))
    out = cli.ok(
        "verify", OP, attempt, "--output", "y=true", "--layout-exit", "0", "--perf-dir", str(folder)
    )
    assert out["verdict"] == "adopt"
    measured = next(e for e in cli.events() if e["type"] == "attempt.measured")["payload"]
    assert measured["origin"]["level"] == "artefact"
    assert measured["origin"]["command"] == "file:{root}/perf/measurement.json"  # portable
    assert measured["accuracy_origin"] == {
        "command": None,
        "duration_s": None,
        "exit_code": None,
        "level": "reported",
        "output_digest": None,
        "tool": None,
        "tool_version": None,
    }
    assert measured["outputs"] == [{"all_close": True, "max_diff": None, "name": "y"}]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--output", "y=true"], "give the accuracy evidence whole"),
        (["--output", "y=true", "--layout-exit", "0", "--time", "3us"], "give only one of"),
    ],
)
def test_a_partial_or_doubled_split_is_bad_input(cli: Cli, extra: list[str], message: str) -> None:
    """Outputs without the layout exit, or times from two sources: exit 2, nothing written."""
    attempt = pending(cli)
    folder = cli.root / "perf"
    folder.mkdir()
    (folder / "measurement.json").write_text(json.dumps({"times_us": [90.0]}))
    before = snapshot(cli.root)
    refused = cli("verify", OP, attempt, *extra, "--perf-dir", str(folder))
    assert refused.code == 2 and message in refused.json["error"]
    assert snapshot(cli.root) == before


@pytest.mark.slow
def test_a_raw_pypto_output_folder_is_parsed_by_the_adapter(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept PyPTO run folder, with no measurement.json, is read through the adapter."""
    pytest.importorskip("pypto")
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the adapter, as an installed one would be
    from tools.pypto import runner

    doc, code = runner.measure(
        runner.Request(
            op_dir=REPO / "custom" / "softmax",
            config={"vec_tile_shape": [1, 8, 1, 64]},
            numerics=False,
            layout=False,
            keep_dir=tmp_path / "kept",
        )
    )
    assert code == 0
    folder = Path(doc["artefact_dir"])
    assert not (folder / "measurement.json").exists()
    attempt = pending(cli)
    before = cli.events()
    # The folder is read through the adapter, which finds the simulated part that ran it; the
    # fixture's baseline was typed (device unknown), so no verdict compares the two (issue 29,
    # R8) and nothing is written.
    refused = cli(
        "verify", OP, attempt, "--output", "y=true", "--layout-exit", "0", "--perf-dir", str(folder)
    )
    assert refused.code == 3 and refused.json["rule"] == "R8", refused
    assert "measured on sim (" in refused.json["blocking"] and "unknown" in refused.json["blocking"]
    assert cli.events() == before
