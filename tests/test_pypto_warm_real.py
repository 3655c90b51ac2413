"""The warm worker with real PyPTO (slow): a config measured in a fork of the worker gives the
document a new child process gives, a compile failure included (its cause comes from pypto's
log, which the worker hands over), and the document says which ran."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not an installed package
from tools.pypto import runner, warm  # noqa: E402

pytestmark = pytest.mark.slow
OP = ROOT / "custom" / "softmax"
GOOD = {"vec_tile_shape": [1, 32, 1, 256], "unroll_list": [1]}
# Over the UB size: the compiler refuses it (PYPTO.md), and only pypto's log says why.
INFEASIBLE = {"vec_tile_shape": [4, 32, 1, 256], "unroll_list": [4]}


@pytest.fixture(scope="module", autouse=True)
def _needs_pypto() -> None:
    pytest.importorskip("pypto")
    pytest.importorskip("torch")


@pytest.fixture
def worker() -> Iterator[warm.Worker]:
    # Started in the test's own environment (its cache folder, pytest's phase): a worker
    # started in another one would be refused, and the runs would be cold.
    os.environ.pop(warm.ENV, None)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    started = warm.start(sys.executable, runner.child_environment(env, output_dir=None, home=None))
    try:
        yield started
    finally:
        started.close()


def measure(config: dict[str, Any], address: str | None) -> tuple[dict[str, Any], int]:
    os.environ.pop("PYTEST_CURRENT_TEST", None)  # pytest sets it anew per phase
    if address is None:
        os.environ.pop(warm.ENV, None)
    else:
        os.environ[warm.ENV] = address
    try:
        return runner.measure(runner.Request(op_dir=OP, config=config, verify_passes="last"))
    finally:
        os.environ.pop(warm.ENV, None)


def comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """The document less what differs between any two runs: the run's own figures (wall time,
    memory, how it started), the host's, and pass-verify's CSV, which names its folder and rows
    with timestamps (two new processes differ there too)."""
    kept = {k: v for k, v in doc.items() if k not in ("run", "env")}
    kept["artefacts"] = {
        k: v for k, v in doc["artefacts"].items() if not k.endswith("verify_result_brief.csv")
    }
    return kept


@pytest.mark.parametrize("config", [GOOD, INFEASIBLE], ids=["measured", "compile-failure"])
def test_a_warm_fork_gives_the_document_a_new_process_gives(
    worker: warm.Worker, config: dict[str, Any]
) -> None:
    cold, cold_code = measure(config, None)
    forked, forked_code = measure(config, worker.address)
    assert cold["run"]["child"] == "cold"
    assert forked["run"]["child"] == "warm"
    assert forked["run"]["import_s"] < 0.1  # pypto and torch were imported by the worker
    # On a mismatch, say why each run failed (CI once saw the cold run fail with exit 3 alone).
    assert forked_code == cold_code, (cold["failure"], forked["failure"])
    assert comparable(forked) == comparable(cold)
    if config is INFEASIBLE:
        # The cause is pypto's own first log error, read from the run's home.
        assert forked["failure"]["category"] == "compile"
        assert "exceeds MEM_UB size" in forked["failure"]["detail"]
    else:
        assert forked["failure"] is None and forked["outputs"][0]["all_close"] is True
        assert forked["tool_version"] == cold["tool_version"] == "0.2.0"
