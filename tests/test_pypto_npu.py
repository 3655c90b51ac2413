"""NPU mode of the PyPTO adapter without a device: the run mode as PyPTO chooses it, a warm-up
and three warm runs through a fake device layer (tests/data/pypto/npu/fake_layer.py), the
profile files parsed, every sample recorded, the device named, and a missing device refused
as a harness error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not an installed package
from ledger.errors import BadInput  # noqa: E402
from ledger.schema.events import Origin  # noqa: E402
from ledger.shell import harness  # noqa: E402
from ledger.shell import runner as ledger_runner  # noqa: E402
from stages import commands as cmd  # noqa: E402
from tools.pypto import device, device_run, runner  # noqa: E402

NPU_DATA = ROOT / "tests" / "data" / "pypto" / "npu"
TIMEOUT_S = 300

IMPL = '''"""A CPU kernel with the op contract's signature: the fake device runs it."""
from typing import Any

INPUT_NAMES = ("x",)
OUTPUT_NAMES = ("y",)
DEFAULT_CONFIG: dict[str, Any] = {"scale": 2}


def resolve_config(config: dict[str, Any], rank: int = 2) -> dict[str, Any]:
    unknown = sorted(set(config) - set(DEFAULT_CONFIG))
    if unknown:
        raise ValueError(f"unknown config keys {unknown}")
    return {**DEFAULT_CONFIG, **config}


def build_kernel(shape, dtype, config, *, verify_options=None@RUN_MODE@):
    scale = resolve_config(config)["scale"]
    @CHECK@

    def kernel(x, y):
        y.copy_(x * scale)

    return kernel
'''
GOLDEN = """import torch


def make_inputs(shape, dtype, seed):
    return [torch.randn(tuple(shape), generator=torch.Generator().manual_seed(seed))]


def golden(x):
    return [x * @FACTOR@]
"""
SPEC = """---
schema_version: 1
op_name: twice
supported_dtypes: ["fp32"]
p0_shapes: [[4, 8]]
tolerance: {"rtol": 1.0e-5, "atol": 1.0e-6}
---
"""


def write_op(folder: Path, *, run_mode: bool = True, factor: int = 2) -> Path:
    """A small op folder whose kernel needs no pypto."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SPEC.md").write_text(SPEC)
    (folder / "twice_impl.py").write_text(
        IMPL.replace("@RUN_MODE@", ", run_mode=None" if run_mode else "").replace(
            "@CHECK@", 'assert run_mode == "npu-fake", run_mode' if run_mode else "pass"
        )
    )
    (folder / "twice_golden.py").write_text(GOLDEN.replace("@FACTOR@", str(factor)))
    (folder / "layout_check.py").write_text("print('layout ok')\n")
    return folder


@pytest.fixture
def toolkit(tmp_path: Path) -> Path:
    """A CANN install as version files only: Ascend/{ascend-toolkit/latest, driver}."""
    ascend = tmp_path / "Ascend"
    home = ascend / "ascend-toolkit" / "latest"
    (home / "compiler").mkdir(parents=True)
    (home / "compiler" / "version.info").write_text("Version=8.0.RC3\ntimestamp=20241010\n")
    (ascend / "driver").mkdir()
    (ascend / "driver" / "version.info").write_text("Version=24.1.rc2\nascendhal_version=7.35\n")
    return home


@pytest.fixture
def fake_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake device layer for every adapter process of the test; its call log's path."""
    log = tmp_path / "fake-npu.log"
    monkeypatch.setenv(device_run.LAYER_ENV, "fake_layer:FakeNpu")
    monkeypatch.setenv("PYTHONPATH", str(NPU_DATA))
    monkeypatch.setenv("FAKE_NPU_PROFILE", str(NPU_DATA / "device_runs"))
    monkeypatch.setenv("FAKE_NPU_LOG", str(log))
    for name in (device.HOME_ENV, device.DEVICE_ID_ENV, device.VISIBLE_ENV, "FAKE_NPU_FAIL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("FAKE_NPU_MISSING", raising=False)
    return log


def adapter(*args: str) -> tuple[dict[str, Any], int, str]:
    """`python -m tools.pypto.run ARGS --json`: its document, exit code and whole stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "tools.pypto.run", *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), done.returncode, done.stdout


@pytest.mark.slow  # adapter processes that import torch
def test_npu_mode_from_the_environment_runs_warmup_and_three_samples(
    tmp_path: Path, toolkit: Path, fake_device: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ASCEND_HOME_PATH set, no --run-mode: NPU mode; the device is named; samples recorded."""
    monkeypatch.setenv(device.HOME_ENV, str(toolkit))
    monkeypatch.setenv(device.VISIBLE_ENV, "4,6")
    monkeypatch.setenv(device.DEVICE_ID_ENV, "1")
    op = write_op(tmp_path / "twice")
    doc, code, _ = adapter("--op-dir", str(op), "--keep-artefacts", str(tmp_path / "kept"))
    assert code == 0, doc
    assert fake_device.read_text().splitlines() == [
        "open 1",  # PyPTO's device index, among the visible NPUs
        "run warmup",
        "run run_1",
        "run run_2",
        "run run_3",
    ]
    assert doc["tool"] == "pypto-npu" and doc["run"]["child"].startswith("cold (a device run")
    assert doc["device"] == {
        "run_mode": "npu",
        "soc": "Ascend910B3",
        "id": 6,  # the second visible NPU
        "cann": "8.0.RC3",
        "driver": "24.1.rc2",
    }
    # The fixture's warm runs took 9.5, 9.0 and 8.8 µs; the warm-up's 12.0 is no sample.
    assert doc["times_us"] == [9.5, 9.0, 8.8] and doc["time_us"] == 9.0
    assert doc["metrics"]["warmup_time_us"] == 12.0 and doc["metrics"]["time_min_us"] == 8.8
    assert doc["util_pct"] == pytest.approx((100 + 75 + 400 / 9 + 50 + 0 + 25) / 6)
    assert doc["metrics_source"] == "run_2/bubble_analysis.log (the median of 3 warm runs)"
    # Printed by the "device" at file descriptor 1 and captured there: the printed 30.56,
    # not 30.5556 recomputed from the swimlane.
    assert doc["metrics"]["aicore_summary_util_pct"] == 30.56
    (out,) = doc["outputs"]
    assert out["all_close"] is True and out["source"].startswith("device outputs")
    assert doc["failure"] is None and doc["layout_exit"] == 0
    # The ledger reads the document as it is (the device key is data to it) and keeps
    # every sample, so its bootstrap applies.
    verify = ledger_runner.verify_command(
        "a1", ledger_runner.Document(doc=doc, origin=Origin(level="measured"), source="adapter")
    )
    assert isinstance(verify, cmd.Verify) and verify.times_us == (9.5, 9.0, 8.8)
    assert verify.util_pct == doc["util_pct"] and verify.metrics == doc["metrics"]
    kept = Path(doc["artefact_dir"])
    assert "AICORE Prof Summary" in (kept / "run_2" / "stdout.log").read_text()
    assert json.loads((kept / "device.json").read_text()) == doc["device"]
    again, code, _ = adapter("--perf-dir", str(kept), "--op-dir", str(op), "--no-layout")
    assert code == 0
    assert (again["times_us"], again["device"], again["tool"]) == (
        doc["times_us"],
        doc["device"],
        "pypto-npu",
    )
    assert again["metrics"] == doc["metrics"] and again["artefacts"] == doc["artefacts"]


@pytest.mark.slow  # adapter processes that import torch
def test_forced_npu_mode_without_a_toolkit_names_no_versions(
    tmp_path: Path, fake_device: Path
) -> None:
    """--run-mode npu forces the device path; unknown versions are null, never guessed."""
    doc, code, _ = adapter("--op-dir", str(write_op(tmp_path / "twice")), "--run-mode", "npu")
    assert code == 0
    assert doc["device"] == {
        "run_mode": "npu",
        "soc": "Ascend910B3",
        "id": 0,
        "cann": None,
        "driver": None if device.driver_version(None) is None else device.driver_version(None),
    }


@pytest.mark.slow  # adapter processes that import torch
def test_a_pinned_run_measures_only_while_it_holds_the_npu_lock(
    tmp_path: Path, fake_device: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given the NPU's lock ($TUNE_LEDGER_DEVICE_LOCK, tools/devices.py), the adapter opens the
    device and prepares, then waits while another run holds the lock: no warm-up before it is
    released, then the warm-up and the three runs."""
    import fcntl
    import time

    lock = tmp_path / "npu0.lock"
    held = device.open_lock(lock)
    fcntl.flock(held, fcntl.LOCK_EX)  # another run measures on the NPU
    monkeypatch.setenv(device.LOCK_ENV, str(lock))
    phase_file = tmp_path / "phase"
    monkeypatch.setenv("TUNE_LEDGER_PROGRESS_FILE", str(phase_file))
    argv = [sys.executable, "-m", "tools.pypto.run", "--op-dir", str(write_op(tmp_path / "op"))]
    process = subprocess.Popen(
        [*argv, "--run-mode", "npu", "--json"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline and process.poll() is None:
            if phase_file.exists() and "waiting for the NPU" in phase_file.read_text():
                break
            time.sleep(0.05)
        time.sleep(1.0)  # ample for the fake warm-up, were the run not waiting
        assert fake_device.read_text().splitlines() == ["open 0"]
    finally:
        os.close(held)
    out, _ = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, out
    assert fake_device.read_text().splitlines() == [
        "open 0",
        "run warmup",
        "run run_1",
        "run run_2",
        "run run_3",
    ]
    assert json.loads(out.strip().splitlines()[-1])["times_us"] == [9.5, 9.0, 8.8]


@pytest.mark.slow  # adapter processes that import torch
def test_a_missing_device_is_a_harness_error_nothing_measured(
    tmp_path: Path, fake_device: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The device could not be opened: exit 4, an error naming what to check, no document;
    the ledger reads it as a harness error (nothing written, the attempt stays pending)."""
    monkeypatch.setenv("FAKE_NPU_MISSING", "1")
    op = write_op(tmp_path / "twice")
    doc, code, stdout = adapter("--op-dir", str(op), "--run-mode", "npu")
    assert code == runner.EXIT_DEVICE == 4
    assert doc == {
        "error": "the NPU could not be used: NPU 0 is not visible: this process sees 0",
        "code": 4,
    }
    assert fake_device.read_text().splitlines() == ["open 0"]  # no run, no layout check
    run = ledger_runner.CommandRun("adapter", code, stdout, "", 1.0, False)
    with pytest.raises(BadInput, match="harness error, not a failure of the idea"):
        harness.result_document(run, doc, "fix it", pending="a1")


@pytest.mark.slow  # imports the real pypto
def test_a_toolkit_without_cann_libraries_is_a_harness_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This host has no CANN: with ASCEND_HOME_PATH set, the real layer cannot load pypto's
    CANN runtime, and says to check the toolkit and its set_env.sh."""
    pytest.importorskip("pypto")
    monkeypatch.delenv(device_run.LAYER_ENV, raising=False)
    monkeypatch.setenv(device.HOME_ENV, str(tmp_path / "no-cann"))
    doc, code, _ = adapter("--op-dir", str(ROOT / "custom" / "softmax"))
    assert code == 4 and set(doc) == {"error", "code"}
    assert doc["error"].startswith("the NPU could not be used: pypto could not load CANN's")
    assert f"ASCEND_HOME_PATH={tmp_path / 'no-cann'}" in doc["error"]
    assert "set_env.sh" in doc["error"]


@pytest.mark.slow  # adapter processes that import torch
def test_a_failing_run_on_the_device_is_classified(
    tmp_path: Path, fake_device: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compile error in the warm-up is `compile`; a later run's error `runtime`."""
    op = write_op(tmp_path / "twice")
    monkeypatch.setenv("FAKE_NPU_FAIL", "warmup:Errcode: FFFFFF! Run pass failed., func X")
    doc, code, _ = adapter("--op-dir", str(op), "--run-mode", "npu", "--no-layout")
    assert code == 3 and doc["failure"]["category"] == "compile"
    assert doc["device"]["soc"] == "Ascend910B3" and doc["times_us"] == []
    monkeypatch.setenv("FAKE_NPU_FAIL", "run_2:aicore exception at task 3")
    doc, code, _ = adapter("--op-dir", str(op), "--run-mode", "npu", "--no-layout")
    assert code == 3 and doc["failure"] == {
        "category": "runtime",
        "detail": "RuntimeError: aicore exception at task 3",
    }


@pytest.mark.slow  # adapter processes that import torch
def test_accuracy_comes_from_the_device_outputs(tmp_path: Path, fake_device: Path) -> None:
    """Outputs that differ from the golden are an accuracy failure, the time still measured."""
    op = write_op(tmp_path / "twice", factor=3)
    doc, code, _ = adapter("--op-dir", str(op), "--run-mode", "npu", "--no-layout")
    assert code == 3 and doc["failure"]["category"] == "accuracy"
    (out,) = doc["outputs"]
    assert out["all_close"] is False and out["max_diff"] > 0
    assert doc["time_us"] == 9.0


@pytest.mark.slow  # adapter processes that import torch
def test_an_impl_without_run_mode_is_refused_for_npu(tmp_path: Path, fake_device: Path) -> None:
    """An impl written before run modes hard-codes the simulator: bad input for NPU mode."""
    doc, code, _ = adapter(
        "--op-dir", str(write_op(tmp_path / "twice", run_mode=False)), "--run-mode", "npu"
    )
    assert code == 2 and "build_kernel has no run_mode parameter" in doc["error"]


@pytest.mark.slow  # adapter processes that import torch
def test_msprof_wraps_the_run_and_its_op_summary_is_read(
    tmp_path: Path, fake_device: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--msprof: the child runs under msprof (here a stand-in on PATH); its CSV is parsed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (csv_path,) = (NPU_DATA / "device_runs").rglob("op_summary_*.csv")
    msprof = bin_dir / "msprof"
    msprof.write_text(
        "#!/bin/sh\n"
        'out="${1#--output=}"; shift\n'
        '"$@"; code=$?\n'
        'mkdir -p "$out/PROF_1/mindstudio_profiler_output"\n'
        f'cp "{csv_path}" "$out/PROF_1/mindstudio_profiler_output/op_summary_1.csv"\n'
        "exit $code\n"
    )
    msprof.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    op = write_op(tmp_path / "twice")
    doc, code, _ = adapter("--op-dir", str(op), "--run-mode", "npu", "--msprof", "--no-layout")
    assert code == 0
    assert doc["metrics"]["msprof_task_duration_us"] == 10.9
    assert doc["metrics"]["msprof_launches"] == 4
    doc, code, _ = adapter("--op-dir", str(op), "--run-mode", "sim", "--msprof")
    assert code == 2 and "needs NPU mode" in doc["error"]


# ------------------------------------------------------------------ the pieces


def test_run_mode_is_chosen_as_pypto_chooses() -> None:
    """NPU when a CANN toolkit is configured, else SIM; a forced mode wins."""
    assert device.resolve_run_mode(None, {}) == "sim"
    assert device.resolve_run_mode(None, {"ASCEND_HOME_PATH": "/x"}) == "npu"
    assert device.resolve_run_mode("sim", {"ASCEND_HOME_PATH": "/x"}) == "sim"
    assert device.resolve_run_mode("npu", {}) == "npu"


def test_a_simulated_run_never_sees_the_toolkit() -> None:
    """The child of a SIM run loses ASCEND_HOME_PATH (one simulator everywhere); NPU keeps it."""
    base = {"ASCEND_HOME_PATH": "/opt/cann", "PATH": "/bin"}
    sim = runner.child_environment(base, output_dir=None, home=None, run_mode="sim")
    npu = runner.child_environment(base, output_dir=None, home=None, run_mode="npu")
    chosen = runner.child_environment(base, output_dir=None, home=None)
    assert "ASCEND_HOME_PATH" not in sim
    assert npu["ASCEND_HOME_PATH"] == chosen["ASCEND_HOME_PATH"] == "/opt/cann"


def test_simulator_device_is_a_constant() -> None:
    """SIM names its simulated part and nothing of the machine."""
    described = device.describe("sim", {"ASCEND_HOME_PATH": "/x", "TILE_FWK_DEVICE_ID": "3"})
    assert described == {
        "run_mode": "sim",
        "soc": device.SIM_SOC,
        "id": None,
        "cann": None,
        "driver": None,
    }


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, 0),
        ({"TILE_FWK_DEVICE_ID": "2"}, 2),
        ({"TILE_FWK_DEVICE_ID": "1", "ASCEND_RT_VISIBLE_DEVICES": "4, 6"}, 6),
        ({"TILE_FWK_DEVICE_ID": "2", "ASCEND_RT_VISIBLE_DEVICES": "4,6"}, None),
        ({"TILE_FWK_DEVICE_ID": "x"}, None),
    ],
)
def test_physical_device_id(environ: dict[str, str], expected: int | None) -> None:
    """PyPTO's index among the visible NPUs, mapped to the physical one; None if unreadable."""
    assert device.physical_device_id(environ) == expected


def test_a_device_index_that_is_no_number_is_refused_by_name() -> None:
    """A malformed TILE_FWK_DEVICE_ID cannot open a device: the error names the variable."""
    with pytest.raises(ValueError, match=r"TILE_FWK_DEVICE_ID must be a device index"):
        device.logical_device_id({"TILE_FWK_DEVICE_ID": "npu1"})


def test_cann_version_sources(tmp_path: Path) -> None:
    """compiler/version.info, else the toolkit's install info, else the folder's name."""
    home = tmp_path / "cann-8.1.RC1"
    (home / "aarch64-linux").mkdir(parents=True)
    assert device.cann_version(home) == "8.1.RC1"
    (home / "aarch64-linux" / "ascend_toolkit_install.info").write_text(
        "package_name=Ascend-cann-toolkit\nversion=8.1.RC1.alpha001\n"
    )
    assert device.cann_version(home) == "8.1.RC1.alpha001"
    (home / "compiler").mkdir()
    (home / "compiler" / "version.info").write_text("Version=8.1.RC1\n")
    assert device.cann_version(home) == "8.1.RC1"
    assert device.cann_version(tmp_path / "elsewhere") is None


def test_stdout_is_captured_at_the_file_descriptor(tmp_path: Path) -> None:
    """What C code and started processes write to fd 1 lands in the run's file."""
    target = tmp_path / "stdout.log"
    with device_run.stdout_to(target):
        os.write(1, b"from fd 1\n")
        subprocess.run([sys.executable, "-c", "print('from a child process')"], check=True)
        import ctypes

        ctypes.CDLL(None).printf(b"from C's stdio\n")
    assert target.read_text().splitlines() == [
        "from fd 1",
        "from a child process",
        "from C's stdio",
    ]
