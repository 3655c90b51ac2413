"""The device is part of every measurement (issue 29.2): recorded, shown, keyed in the
measurement cache, and never compared across two devices (R8).

Through the CLI, with a stand-in verifier that names the device its environment says it runs
on (`STANDIN_SOC`, `STANDIN_NPU`; unset `STANDIN_SOC`: it names no device at all).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from cli_harness import OP, Cli, activate, snapshot

from ledger.domain import devices

VERIFIER = """
    import hashlib, json, os, pathlib, sys
    op_dir, config = pathlib.Path(sys.argv[1]), json.loads(sys.argv[2])
    with open(pathlib.Path(__file__).with_name("runs.log"), "a") as log:
        log.write(json.dumps({"config": config, "soc": os.environ.get("STANDIN_SOC")}) + "\\n")
    digest = hashlib.sha256((op_dir / "sm_impl.py").read_bytes()).hexdigest()
    tile = config.get("vec_tile_shape", [1, 8, 1, 64])
    doc = {"config": config, "impl_digest": digest, "tool": "stand-in", "tool_version": "1",
           "times_us": [round(40960.0 / (tile[1] * tile[3]) + 1.0, 3)], "layout_exit": 0,
           "outputs": [{"name": "y", "all_close": True, "max_diff": 0.0}]}
    if os.environ.get("STANDIN_SOC"):
        doc["device"] = {"run_mode": "npu", "soc": os.environ["STANDIN_SOC"],
                         "id": int(os.environ.get("STANDIN_NPU", "0")),
                         "cann": "8.0.RC3", "driver": "24.1.rc2"}
    print(json.dumps(doc))
"""
B3, B4 = "Ascend910B3", "Ascend910B4"


def _spec(script: Path) -> str:
    command = [sys.executable, str(script), "{op_dir}", "{config}"]
    return (
        "---\n"
        "p0_shapes: [[32, 32, 1, 256]]\n"
        "perf_target: {time_us: 5.0, metric: max_work_time_us}\n"
        "baseline_config: {vec_tile_shape: [1, 8, 1, 64]}\n"
        "knobs:\n"
        "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n"
        f"verifier: {{command: {json.dumps(command)}, timeout_s: 60}}\n"
        "---\n# sm\n"
    )


@pytest.fixture
def script(tmp_path: Path) -> Path:
    folder = tmp_path / "verifier"
    folder.mkdir()
    path = folder / "verifier.py"
    path.write_text(textwrap.dedent(VERIFIER), "utf-8")
    return path


def _runs(script: Path) -> list[dict[str, Any]]:
    log = script.with_name("runs.log")
    return (
        [json.loads(line) for line in log.read_text("utf-8").splitlines()] if log.exists() else []
    )


def _on(monkeypatch: pytest.MonkeyPatch, soc: str | None, npu: int = 0) -> None:
    if soc is None:
        monkeypatch.delenv("STANDIN_SOC", raising=False)
    else:
        monkeypatch.setenv("STANDIN_SOC", soc)
    monkeypatch.setenv("STANDIN_NPU", str(npu))


def _campaign(cli: Cli, script: Path) -> None:
    """An activated op whose baseline was measured from SPEC.md, in frontend, a point open."""
    cli.root.mkdir(exist_ok=True)
    activate(cli)
    (cli.root / "custom" / OP / "SPEC.md").write_text(_spec(script), "utf-8")
    cli.ok("target", OP, "--from-spec")
    cli.ok("skill", "load", OP, "pypto-op-perf-tune")
    cli.ok("stage", "enter", OP, "frontend")
    cli.ok("skill", "load", OP, "tune-frontend")
    cli.ok("point", "open", OP, "vec_tile_shape")


def _candidate(cli: Cli, tile: list[int]) -> str:
    config = json.dumps({"vec_tile_shape": tile})
    return str(cli.ok("candidate", OP, "--config", config, "--prior", "test")["attempt"])


def test_two_devices_refused_never_cached_across_and_shown(
    cli: Cli, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 910B3 campaign: a 910B4 measurement is refused with nothing written (R8, exit 3);
    the 910B4 result the cache kept is not served to the 910B3 run after it; another NPU of
    the same part (another id) is comparable; log, MEMORY.md and the report name each device."""
    _on(monkeypatch, B3, npu=0)
    _campaign(cli, script)
    first = _candidate(cli, [1, 16, 1, 64])
    assert cli.ok("measure", OP)["verdict"] == "adopt"
    second = _candidate(cli, [1, 32, 1, 64])

    _on(monkeypatch, B4, npu=0)
    before = snapshot(cli.root)
    refused = cli("measure", OP)
    assert refused.code == 3, refused.stdout
    error = refused.json
    assert error["rule"] == "R8"
    assert B3 in error["blocking"] and B4 in error["blocking"]
    assert "soc" in error["blocking"]
    assert f"tune-ledger measure {OP}" in error["next"]
    assert snapshot(cli.root) == before  # nothing written
    assert cli.ok("status", OP)["pending"] == second
    runs = len(_runs(script))

    # Back on a 910B3, another NPU of it: the kept 910B4 result is not served; this one is
    # run and compared (the device's number is not compared).
    _on(monkeypatch, B3, npu=5)
    assert cli.ok("measure", OP)["verdict"] == "adopt"
    assert len(_runs(script)) == runs + 1
    assert _runs(script)[-1]["soc"] == B3
    measured = [e for e in cli.events() if e["type"] == "attempt.measured"]
    assert [e["payload"]["device"]["soc"] for e in measured] == [B3, B3]
    assert [e["payload"]["device"]["id"] for e in measured] == ["0", "5"]
    assert [e["schema"] for e in measured] == [2, 2]

    log = cli("log", OP, as_json=False).stdout
    line_of = {a: next(line for line in log.splitlines() if a in line) for a in (first, second)}
    assert f"[on npu {B3} #0 (CANN 8.0.RC3, driver 24.1.rc2)]" in line_of[first]
    assert f"[on npu {B3} #5 (CANN 8.0.RC3, driver 24.1.rc2)]" in line_of[second]
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    assert f"| Device | npu {B3} #0 (CANN 8.0.RC3, driver 24.1.rc2) |" in memory
    cli.ok("report", OP)
    report = (cli.root / "custom" / OP / f"{OP}_tuning_report.md").read_text("utf-8")
    assert f"| Best measured on | npu {B3} #5 (CANN 8.0.RC3, driver 24.1.rc2) |" in report
    assert cli.ok("audit", OP)["clean"] is True


def test_a_result_naming_no_device_is_unknown_and_compared_only_with_unknowns(
    cli: Cli, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verifier that names no device: recorded as device unknown; a measurement that names
    one is not compared with it (R8), and an unknown one is."""
    _on(monkeypatch, None)
    _campaign(cli, script)
    sheet = next(e for e in cli.events() if e["type"] == "target.set")
    assert sheet["payload"]["device"] is None
    _candidate(cli, [1, 16, 1, 64])
    _on(monkeypatch, B3)
    before = snapshot(cli.root)
    refused = cli("measure", OP)
    assert refused.code == 3 and refused.json["rule"] == "R8"
    assert "unknown" in refused.json["blocking"]
    assert snapshot(cli.root) == before
    _on(monkeypatch, None)
    assert cli.ok("measure", OP)["verdict"] == "adopt"
    memory = (cli.root / "custom" / OP / "MEMORY.md").read_text("utf-8")
    assert "| Device | unknown |" in memory


def test_a_stated_device_keys_the_cache(
    tmp_path: Path, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two roots, one config: the baseline is served from the cache on the same stated device
    and measured again on another (TUNE_LEDGER_DEVICE is part of the key)."""
    monkeypatch.setenv("TUNE_LEDGER_DEVICE", B3)
    _on(monkeypatch, B3)
    _campaign(Cli(tmp_path / "one"), script)
    _campaign(Cli(tmp_path / "two"), script)
    assert len(_runs(script)) == 1  # the second baseline was a hit
    monkeypatch.setenv("TUNE_LEDGER_DEVICE", B4)
    _on(monkeypatch, B4)
    third = Cli(tmp_path / "three")
    _campaign(third, script)
    assert len(_runs(script)) == 2
    sheet = next(e for e in third.events() if e["type"] == "target.set")
    assert sheet["payload"]["device"]["soc"] == B4


def test_a_malformed_device_is_bad_input_and_writes_nothing(
    cli: Cli, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`device` that is not the object of five fields is refused as bad input (exit 2)."""
    _on(monkeypatch, B3)
    _campaign(cli, script)
    _candidate(cli, [1, 16, 1, 64])
    script.write_text(
        script.read_text("utf-8").replace('"driver": "24.1.rc2"}', '"driver": "x", "gpu": 1}'),
        "utf-8",
    )
    before = snapshot(cli.root)
    result = cli("measure", OP)
    assert result.code == 2, result.stdout
    assert "gpu" in result.json["error"]
    assert snapshot(cli.root) == before


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        (None, None, True),
        (None, {"run_mode": "sim"}, False),
        (
            {"run_mode": "npu", "soc": B3, "id": "0"},
            {"run_mode": "npu", "soc": B3, "id": "7"},
            True,
        ),
        ({"run_mode": "npu", "soc": B3, "cann": "8.0"}, {"run_mode": "npu", "soc": B3}, False),
        ({"run_mode": "sim", "soc": B3}, {"run_mode": "npu", "soc": B3}, False),
    ],
)
def test_which_devices_a_verdict_may_compare(
    first: dict[str, str] | None, second: dict[str, str] | None, same: bool
) -> None:
    """Run mode, part, CANN and driver are compared; the device's number is not."""
    assert devices.same_kind(first, second) is same
    assert devices.same_kind(second, first) is same


def test_the_way_forward_carries_the_best_to_the_new_device(
    cli: Cli, script: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused on a 910B4, the attempt is abandoned, the best's config measured there
    (`--prior remeasure:device`): that measurement is the best, with no verdict; the change
    measured again on the 910B4 then gets its verdict against it; audit re-derives it all."""
    _on(monkeypatch, B3)
    _campaign(cli, script)
    _candidate(cli, [1, 16, 1, 64])
    cli.ok("measure", OP)
    change = _candidate(cli, [1, 32, 1, 64])
    _on(monkeypatch, B4)
    refused = cli("measure", OP)
    assert refused.code == 3 and "--prior remeasure:device" in refused.json["next"]
    cli.ok("abandon", OP, change, "--reason", "measured on a 910B4: carry the best there")
    best_config = json.dumps({"vec_tile_shape": [1, 16, 1, 64]})
    again = cli.ok("candidate", OP, "--config", best_config, "--prior", "remeasure:device")
    result = cli.ok("measure", OP)
    carried = [e for e in cli.events() if e["type"] == "best.remeasured"]
    assert [e["payload"]["attempt"] for e in carried] == [again["attempt"]]
    assert not any(
        e["type"] == "attempt.verdict" and e["payload"]["attempt"] == again["attempt"]
        for e in cli.events()
    )
    status = cli.ok("status", OP)
    assert status["best"]["attempt"] == again["attempt"], result
    # The change, measured again on the 910B4, is compared with the best measured there.
    _candidate(cli, [1, 32, 1, 64])
    assert cli.ok("measure", OP)["verdict"] == "adopt"
    log = cli("log", OP, as_json=False).stdout
    assert "remeasured" in log and f"[on npu {B4}" in log
    assert cli.ok("audit", OP)["clean"] is True
    # The same re-measure on the best's own device is an ordinary verdict (no carry).
    assert devices.same_kind({"run_mode": "npu", "soc": B4}, {"run_mode": "npu", "soc": B4})
