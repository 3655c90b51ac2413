"""A device layer without a device, for the adapter's NPU control flow in tests.

tools/pypto/device_run.py runs the kernel through a device layer; the tests name this one in
$TUNE_LEDGER_PYPTO_DEVICE_LAYER (`fake_layer:FakeNpu`, with this folder on PYTHONPATH). It
plays what a device does around the kernel, which runs on the CPU:
- `open` reports an Ascend910B3 (or fails as a missing device when $FAKE_NPU_MISSING is set);
- each run takes the next folder of $FAKE_NPU_PROFILE (`warmup`, `run_1`, ...), copies its
  profile files into the folder pypto would have written them to (`output_fake/` under
  $TILE_FWK_OUTPUT_DIR), and writes its `stdout.log` at file descriptor 1, as pypto's swimlane
  script does (not through sys.stdout);
- $FAKE_NPU_FAIL="RUN:MESSAGE" makes run RUN raise RuntimeError(MESSAGE);
- $FAKE_NPU_LOG, when set, gets one line per call, so a test sees what happened in which order.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from tools.pypto.device_run import DeviceUnavailable, run_names


class FakeNpu:
    """The device layer tools/pypto/device_run.py drives, without a device."""

    def __init__(self) -> None:
        self.profile = Path(os.environ["FAKE_NPU_PROFILE"])
        self.output = Path(os.environ["TILE_FWK_OUTPUT_DIR"]) / "output_fake"
        self.names = iter(run_names())

    def _log(self, line: str) -> None:
        target = os.environ.get("FAKE_NPU_LOG")
        if target:
            with open(target, "a", encoding="utf-8") as log:
                log.write(line + "\n")

    def open(self, device_id: int) -> dict[str, Any]:
        self._log(f"open {device_id}")
        if os.environ.get("FAKE_NPU_MISSING"):
            raise DeviceUnavailable(f"NPU {device_id} is not visible: this process sees 0")
        return {"soc": "Ascend910B3"}

    def run_mode(self) -> Any:
        return "npu-fake"

    def to_device(self, tensor: Any) -> Any:
        return tensor.clone()

    def to_host(self, tensor: Any) -> Any:
        return tensor.clone()

    def run(self, kernel: Any, args: list[Any]) -> None:
        name = next(self.names)
        self._log(f"run {name}")
        failing, _, message = os.environ.get("FAKE_NPU_FAIL", "").partition(":")
        if failing == name:
            raise RuntimeError(message)
        kernel(*args)
        self.output.mkdir(parents=True, exist_ok=True)
        for path in sorted((self.profile / name).iterdir()):
            if path.name == "stdout.log":
                os.write(1, path.read_bytes())
            else:
                shutil.copy(path, self.output / path.name)

    def profile_folder(self) -> Path | None:
        return self.output
