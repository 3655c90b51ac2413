"""The built wheel works outside this repository: in a fresh virtual environment and a new git
repository, `new-op` scaffolds an op and the ledger measures its baseline with the shipped
adapter (real PyPTO), with no `tools` package of this checkout importable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pypto")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel; its dependencies come from this environment (offline)."""
    work = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(work / "dist"),
            str(REPO),
        ],
        work,
        env,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (work / "dist").glob("tune_ledger-*.whl")
    target = work / "venv"
    assert (
        _run([sys.executable, "-m", "venv", "--without-pip", str(target)], work, env).returncode
        == 0
    )
    python = target / "bin" / "python"
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            work,
            env,
        ).stdout.strip()
    )
    # The dependencies (pypto, torch, click, ...) of this environment, as a plain path: its own
    # .pth files (an editable install of this checkout among them) are not processed there.
    (site / "shared-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        work,
        env,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return target


def test_the_wheel_ships_the_adapter_under_its_own_name(venv: Path, tmp_path: Path) -> None:
    """`tune_ledger_tools` is installed, `tools` is not, and tune-ledger-pypto answers."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = _run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.util as u; print(u.find_spec('tune_ledger_tools.pypto.run') is not "
            "None, u.find_spec('tools') is None)",
        ],
        tmp_path,
        env,
    )
    assert probe.stdout.split() == ["True", "True"], probe.stdout + probe.stderr
    helped = _run([str(venv / "bin" / "tune-ledger-pypto"), "--help"], tmp_path, env)
    assert helped.returncode == 0 and "autopilot" in helped.stdout


def test_a_kernel_repository_scaffolds_and_measures_with_the_wheel(
    venv: Path, tmp_path: Path
) -> None:
    """In a new git repo: new-op, activation evidence and the measured baseline (--from-spec)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    repo = tmp_path / "kernels"
    repo.mkdir()
    assert _run(["git", "init", "-q"], repo, env).returncode == 0

    def tune_ledger(*args: str) -> dict[str, Any]:
        done = _run(["tune-ledger", "--json", *args], repo, env)
        assert done.returncode == 0, done.stdout + done.stderr
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    tune_ledger("new-op", "probe")
    spec = repo / "custom" / "probe" / "SPEC.md"
    text = spec.read_text()
    assert "tune_ledger_tools.pypto.run" in text
    spec.write_text(text.replace('"--verify-passes", "last"', '"--verify-passes", "graph"'))
    assert tune_ledger("check-op", "probe")["violations"] == []
    tune_ledger("init", "probe")
    python = str(venv / "bin" / "python")
    tune_ledger(
        "evidence",
        "compare",
        "probe",
        "--run",
        f"{python} -m tune_ledger_tools.pypto.run --op-dir custom/probe --config '{{}}' "
        "--verify-passes graph --json",
    )
    tune_ledger(
        "evidence",
        "layout",
        "probe",
        "--run",
        f"{python} custom/probe/layout_check.py --before-tuning",
    )
    tune_ledger("activate", "probe")
    sheet = tune_ledger("target", "probe", "--from-spec", "--python", python)
    assert sheet["baseline_us"] > 0 and sheet["target_us"] == 2.0
    audit = _run(["tune-ledger", "--json", "audit", "probe"], repo, env)
    report = json.loads(audit.stdout)
    assert audit.returncode == 0 and report["clean"], audit.stdout
    # the compare, the layout check and the baseline: each run by the ledger itself
    assert report["ops"][0]["provenance"] == {
        "artefact": 0,
        "measured": 3,
        "reported": 0,
        "unbound": 0,
    }
