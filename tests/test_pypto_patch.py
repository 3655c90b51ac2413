"""The guard of host_verify_patch: it must refuse loudly on any pypto it was not written for."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not an installed package
from tools.pypto import host_verify_patch as patch  # noqa: E402


def test_the_patched_internals_are_still_the_ones_it_was_written_for() -> None:
    """Fails loudly when pypto's replaced/relied-on functions change (re-check PYPTO.md)."""
    pytest.importorskip("pypto")
    assert patch.installed_version() == patch.SUPPORTED_VERSION, (
        "pypto is not 0.2.0: host_verify_patch will refuse; re-check the workaround"
    )
    assert patch.current_fingerprints() == patch.FINGERPRINTS, (
        "pypto's internals changed: host_verify_patch will refuse; re-check the workaround"
    )


def test_another_version_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any pypto version other than 0.2.0 is refused with a message saying what to do."""
    monkeypatch.setattr(patch, "installed_version", lambda: "0.2.1")
    with pytest.raises(patch.PatchRefused, match=r"written for pypto 0\.2\.0, found 0\.2\.1"):
        patch.check_supported()


def test_changed_internals_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same version, different source of a relied-on function: refused, naming it."""
    pytest.importorskip("pypto")
    changed = dict(patch.FINGERPRINTS)
    changed["runtime._CachedVerifyData.get_data"] = "0" * 64
    monkeypatch.setattr(patch, "FINGERPRINTS", changed)
    with pytest.raises(patch.PatchRefused, match=r"runtime\._CachedVerifyData\.get_data"):
        patch.check_supported()


def test_not_applied_when_cann_is_present(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ASCEND_HOME_PATH set, pypto's own host copy is real: nothing is patched."""
    monkeypatch.setenv("ASCEND_HOME_PATH", "/usr/local/Ascend")
    monkeypatch.setattr(patch, "check_supported", lambda: pytest.fail("must not be reached"))
    assert patch.activate().startswith("not applied: CANN present")


@pytest.mark.slow
def test_refused_patch_is_a_runtime_failure_without_outputs(tmp_path: Path) -> None:
    """A run whose numerics workaround is refused reports no accuracy evidence, loudly."""
    pytest.importorskip("pypto")
    # A sitecustomize that makes the child see another pypto version.
    (tmp_path / "sitecustomize.py").write_text(
        "import importlib.metadata as m\n_v = m.version\n"
        "m.version = lambda name: '9.9.9' if name == 'pypto' else _v(name)\n"
    )
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.pypto.run",
            "--op-dir",
            str(ROOT / "custom" / "softmax"),
            "--no-layout",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    import json

    doc = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 3
    assert doc["failure"]["category"] == "runtime"
    assert "written for pypto 0.2.0, found 9.9.9" in doc["failure"]["detail"]
    assert doc["outputs"] == [] and doc["time_us"] is None
