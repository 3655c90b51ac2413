"""R3's torch-eager target source, measured by the adapter (tools/pypto/reference.py): the NPU
profiler's kernel_details.csv parsed to the figures computed by hand, the warm-up left out of
the timed runs, and the NPU control flow through a fake torch_npu (no device needed)."""

from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tools.pypto import reference

FIXTURE = Path(__file__).parent / "data" / "pypto" / "npu" / "reference" / "kernel_details.csv"
REPO = Path(__file__).resolve().parent.parent


def test_kernel_details_parse_to_each_steps_kernel_time() -> None:
    """Three steps of two kernels: 6.12 + 1.50, 5.98 + 1.42, 6.04 + 1.46 µs."""
    steps = reference.parse_kernel_details(FIXTURE.read_text("utf-8"))
    assert steps == pytest.approx([7.62, 7.40, 7.50])


def test_a_table_without_steps_is_one_step_and_a_foreign_table_is_refused() -> None:
    text = "Name,Duration(us)\nA,1.25\nB,2.5\n"
    assert reference.parse_kernel_details(text) == [3.75]
    with pytest.raises(reference.ReferenceFailure, match="Duration"):
        reference.parse_kernel_details("Op Name,Task Duration(us)\nA,1\n")
    with pytest.raises(reference.ReferenceFailure, match=":3"):
        reference.parse_kernel_details("Name,Duration(us)\nA,1\nB,n/a\n")


def test_the_warm_up_is_not_timed() -> None:
    """One warm-up, three timed runs, each the clock's difference around its call."""
    ticks = iter([0.0, 1e-6, 10.0, 10.000002, 20.0, 20.000004])
    calls: list[int] = []
    samples = reference.time_calls(lambda: calls.append(1), clock=lambda: next(ticks))
    assert len(calls) == 4
    assert samples == pytest.approx([1.0, 2.0, 4.0])


class _Tensor:
    def __init__(self) -> None:
        self.device = "cpu"

    def to(self, where: str) -> _Tensor:
        moved = _Tensor()
        moved.device = where
        return moved


def _fake_torch_npu(log: list[str]) -> types.ModuleType:
    """torch_npu's profiler as the adapter drives it: the trace handler's folder gets the
    fixture's kernel_details.csv when the profile ends."""
    module = types.ModuleType("torch_npu")

    class Profile:
        def __init__(self, **options: Any) -> None:
            self.options = options

        def __enter__(self) -> Profile:
            return self

        def step(self) -> None:
            log.append("step")

        def __exit__(self, *_: object) -> None:
            folder = (
                Path(self.options["on_trace_ready"]) / "host_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
            )
            folder.mkdir(parents=True)
            shutil.copy(FIXTURE, folder / "kernel_details.csv")

    profiler = types.SimpleNamespace(
        ProfilerActivity=types.SimpleNamespace(NPU="npu"),
        schedule=lambda **kw: log.append(f"schedule {sorted(kw.items())}"),
        profile=Profile,
        tensorboard_trace_handler=lambda folder: folder,
    )
    module.profiler = profiler  # type: ignore[attr-defined]
    module.npu = types.SimpleNamespace(synchronize=lambda: log.append("sync"))  # type: ignore[attr-defined]
    return module


def test_on_an_npu_each_active_step_is_timed_from_the_profiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list[str] = []
    monkeypatch.setitem(sys.modules, "torch_npu", _fake_torch_npu(log))
    seen: list[str] = []

    def golden(x: _Tensor) -> list[_Tensor]:
        seen.append(x.device)
        return [x]

    samples = reference.eager_npu(golden, [_Tensor()], tmp_path)
    assert samples == pytest.approx([7.62, 7.40, 7.50])
    assert seen == ["npu"] * 4  # the warm-up and three active steps, on the NPU
    assert log[0] == "schedule [('active', 3), ('repeat', 1), ('wait', 0), ('warmup', 1)]"
    assert log[1:] == ["sync", "step"] * 4


def test_without_torch_npu_the_npu_run_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch_npu", None)
    with pytest.raises(reference.ReferenceFailure, match="torch_npu"):
        reference.eager_npu(lambda x: [x], [_Tensor()], tmp_path)


def test_on_the_simulator_host_torch_eager_runs_on_the_cpu() -> None:
    """The bundled softmax's golden, timed on the CPU: three positive samples, named."""
    pytest.importorskip("torch")
    doc = reference.document(
        REPO / "custom" / "softmax", shape=None, dtype=None, seed=0, run_mode="sim", environ={}
    )
    assert doc["source"] == "torch-eager"
    assert len(doc["times_us"]) == 3 and all(t > 0 for t in doc["times_us"])
    assert doc["device"]["run_mode"] == "cpu"
    assert doc["shape"] == [32, 32, 1, 256]
    assert "1 warm-up + 3 timed runs" in doc["method"]
