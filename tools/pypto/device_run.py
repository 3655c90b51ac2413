"""One config of one op on an Ascend NPU: a warm-up, then warm runs, each run's profile kept.

Runs in the kernel's child process (child.py hands it an NPU request). Everything that touches
the device goes through one object, the device layer: it opens the device, places tensors on
it, runs the kernel and says where the run's profile files landed. The default layer is pypto
on torch_npu (`PyptoNpu`); `$TUNE_LEDGER_PYPTO_DEVICE_LAYER` ("module:attribute", a class or
factory) names another, e.g. tests/data/pypto/npu/fake_layer.py, which plays a device without
one, or a site's own launcher.

The measuring rule is upstream's: one warm-up run (it compiles), then WARM_RUNS warm runs, every
one a sample. Before each run the outputs are zeroed; its stdout is captured at the file
descriptor (pypto prints its "AICORE Prof Summary" from a process it starts with system(), so
sys.stdout never sees it) into `<run>/stdout.log`, and its profile files are moved into `<run>/`
(artefacts.py reads them). The accuracy evidence is the last run's outputs, copied back to the
host and compared with the golden: no host interpretation is needed on a device.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import pkgutil
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from . import artefacts, child, device, phase

LAYER_ENV = "TUNE_LEDGER_PYPTO_DEVICE_LAYER"
WARM_RUNS = 3


class DeviceUnavailable(RuntimeError):
    """The NPU could not be opened: a harness error, whose message says what to check."""


class DeviceLayer(Protocol):
    """What runs a kernel on a device, and where the files of its last run landed."""

    def open(self, device_id: int) -> dict[str, Any]:
        """Open NPU `device_id` (an index among the visible ones); what is known of it, e.g.
        {"soc": "Ascend910B3"}. Raises DeviceUnavailable, naming what to check."""

    def run_mode(self) -> Any:
        """The value `build_kernel(..., run_mode=...)` gets (after open)."""

    def to_device(self, tensor: Any) -> Any: ...

    def to_host(self, tensor: Any) -> Any: ...

    def run(self, kernel: Any, args: list[Any]) -> None:
        """Launch the kernel and wait until the device finished it."""

    def profile_folder(self) -> Path | None:
        """The folder the last run's profile files were written to."""


class PyptoNpu:
    """pypto on torch_npu: tensors on `npu:<id>`, profiling on (`runtime_debug_mode: 1`)."""

    def __init__(self) -> None:
        self.device_id = 0

    def open(self, device_id: int) -> dict[str, Any]:
        home = os.environ.get(device.HOME_ENV)
        if not home:
            raise DeviceUnavailable(
                f"NPU mode needs a CANN toolkit, and {device.HOME_ENV} is not set: source "
                "CANN's set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh), or "
                "measure in the simulator with --run-mode sim"
            )
        try:
            import pypto  # loads CANN's runtime libraries when the toolkit is set
        except (ImportError, OSError) as e:
            raise DeviceUnavailable(
                f"pypto could not load CANN's libraries ({type(e).__name__}: {e}) with "
                f"{device.HOME_ENV}={home}: check that it names a CANN toolkit and that its "
                "set_env.sh was sourced in this shell (LD_LIBRARY_PATH)"
            ) from e
        try:
            import torch
            import torch_npu  # noqa: F401 - registers torch.npu
        except ImportError as e:
            raise DeviceUnavailable(
                f"torch_npu cannot be imported ({e}): install the torch_npu build that matches "
                "this torch and CANN; NPU mode places the kernel's tensors with it"
            ) from e
        visible = os.environ.get(device.VISIBLE_ENV, "(unset)")
        try:
            count = int(torch.npu.device_count())
            if device_id >= count:
                raise DeviceUnavailable(
                    f"NPU {device_id} is not visible: this process sees {count} "
                    f"({device.VISIBLE_ENV}={visible}); check `npu-smi info` (driver loaded, "
                    f"devices healthy) and {device.DEVICE_ID_ENV}"
                )
            torch.npu.set_device(device_id)
        except DeviceUnavailable:
            raise
        except Exception as e:  # any error of the runtime: the device is not usable
            raise DeviceUnavailable(
                f"could not open NPU {device_id} ({type(e).__name__}: {e}); check `npu-smi "
                "info` (driver loaded, device healthy), that this user may open /dev/davinci* "
                f"(group HwHiAiUser), and that no other process holds it ({device.VISIBLE_ENV}="
                f"{visible})"
            ) from e
        pypto.set_debug_options(runtime_debug_mode=1)  # the device then writes its profile
        self.device_id = device_id
        soc = None
        with contextlib.suppress(Exception):
            soc = str(torch.npu.get_device_name(device_id)) or None
        return {"soc": soc}

    def run_mode(self) -> Any:
        import pypto

        return pypto.RunMode.NPU

    def to_device(self, tensor: Any) -> Any:
        return tensor.to(f"npu:{self.device_id}")

    def to_host(self, tensor: Any) -> Any:
        return tensor.cpu()

    def run(self, kernel: Any, args: list[Any]) -> None:
        import torch

        kernel(*args)
        torch.npu.synchronize()

    def profile_folder(self) -> Path | None:
        import pypto

        with contextlib.suppress(Exception):
            folder = Path(pypto.pypto_impl.LogTopFolder())
            if folder.is_dir():
                return folder
        return newest_output_folder()


def newest_output_folder() -> Path | None:
    """The newest `output_*` folder pypto made under $TILE_FWK_OUTPUT_DIR."""
    root = Path(os.environ.get("TILE_FWK_OUTPUT_DIR", "output"))
    folders = [p for p in root.glob("output_*") if p.is_dir()]
    return max(folders, key=lambda p: (p.stat().st_mtime, p.name)) if folders else None


def load_layer(environ: Mapping[str, str]) -> DeviceLayer:
    """The device layer $TUNE_LEDGER_PYPTO_DEVICE_LAYER names, else PyptoNpu."""
    name = environ.get(LAYER_ENV)
    if not name:
        return PyptoNpu()
    try:
        factory = pkgutil.resolve_name(name)
    except (ImportError, AttributeError, ValueError) as e:
        raise DeviceUnavailable(f"{LAYER_ENV}={name} cannot be loaded: {e}") from e
    layer: DeviceLayer = factory()
    return layer


@contextlib.contextmanager
def stdout_to(path: Path) -> Iterator[None]:
    """Send this process's file descriptor 1 (what C code and the processes it starts write
    to, not only sys.stdout) to `path` for the duration."""
    sys.stdout.flush()
    _flush_c_streams()
    saved = os.dup(1)
    try:
        with open(path, "wb") as target:
            os.dup2(target.fileno(), 1)
        yield
    finally:
        sys.stdout.flush()
        _flush_c_streams()
        os.dup2(saved, 1)
        os.close(saved)


def _flush_c_streams() -> None:
    """fflush(NULL): C's stdio buffers a stdout that is a file until it is flushed."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


def collect_profile(source: Path | None, target: Path) -> list[str]:
    """Move the profile files of the last run from `source` into `target`; their names."""
    moved = []
    for name in artefacts.PROFILE_FILES:
        if source is not None and (source / name).is_file():
            shutil.move(os.fspath(source / name), os.fspath(target / name))
            moved.append(name)
    return moved


def run_names() -> list[str]:
    """The runs of one measurement, in order: the warm-up, then the warm runs."""
    return [artefacts.WARMUP, *(f"{artefacts.RUN_PREFIX}{k}" for k in range(1, WARM_RUNS + 1))]


def run_request(
    request: dict[str, Any], load_op: Callable[[], tuple[ModuleType, ModuleType]]
) -> dict[str, Any]:
    """Run an NPU request with the device layer the environment names."""
    try:
        layer = load_layer(os.environ)
    except DeviceUnavailable as e:
        return {"status": "device-error", "error": str(e)}
    return run_on_device(request, layer, load_op)


def run_on_device(
    request: dict[str, Any],
    layer: DeviceLayer,
    load_op: Callable[[], tuple[ModuleType, ModuleType]],
) -> dict[str, Any]:
    """Run the request on the device; the result says `status` ok, config-error, impl-error,
    device-error (the device could not be opened), no-profile or error, and what the device
    said of itself."""
    result: dict[str, Any] = {"status": "error"}
    started = time.monotonic()
    phase.report("opening the NPU")
    try:
        result["device"] = layer.open(device.logical_device_id(os.environ))
    except (DeviceUnavailable, ValueError) as e:
        return {"status": "device-error", "error": str(e)}
    import torch

    result["import_s"] = round(time.monotonic() - started, 3)
    result["torch_version"] = str(torch.__version__)
    impl, gold = load_op()
    shape, dtype, config = request["shape"], request["dtype"], request["config"]
    try:
        result["config"] = impl.resolve_config(config, rank=len(shape))
    except ValueError as e:
        return {**result, "status": "config-error", "error": str(e)}
    result["config"] = child.plain_config(result["config"])
    runs_folder = Path(os.environ["TILE_FWK_OUTPUT_DIR"]) / artefacts.DEVICE_RUNS
    runs_folder.mkdir(parents=True, exist_ok=True)
    (runs_folder / artefacts.DEVICE_JSON).write_text(json.dumps(result["device"], sort_keys=True))
    inputs = gold.make_inputs(shape, dtype, int(request["seed"]))
    goldens = gold.golden(*inputs)
    on_device = [layer.to_device(t) for t in inputs]
    outputs = [layer.to_device(torch.zeros_like(g)) for g in goldens]
    try:
        kernel = child.build_kernel(impl, shape, dtype, config, run_mode=layer.run_mode())
    except child.ImplError as e:
        return {**result, "status": "impl-error", "error": str(e)}
    except Exception as e:  # noqa: BLE001 - the kernel's own failure, classified by the parent
        return {**result, "error": child.error_chain(e), "traceback": traceback.format_exc()}
    if os.environ.get(device.LOCK_ENV):
        phase.report("waiting for the NPU (another run measures on it)")
    # Pinned by tools/devices.py, the run holds the NPU's lock from the warm-up (pypto 0.2.0
    # compiles in the first launch) to the last warm run, so no other run measures on the NPU
    # meanwhile; what comes before (imports, inputs, goldens, the kernel's build) and after (the
    # host compare, parsing, the layout check) overlaps with another run's measuring.
    with contextlib.ExitStack() as measuring:
        try:
            measuring.enter_context(device.measuring_alone(os.environ))
        except OSError as e:
            return {
                **result,
                "status": "device-error",
                "error": f"cannot take the NPU's lock file {os.environ.get(device.LOCK_ENV)} "
                f"({e}): check that its folder can be written ($TUNE_LEDGER_DEVICE_LOCKS)",
            }
        run_started = time.monotonic()
        stopped = _warmup_and_warm_runs(layer, kernel, on_device, outputs, runs_folder)
        result["run_s"] = round(time.monotonic() - run_started, 3)
    if stopped is not None:
        return {**result, **stopped}
    if request["numerics"]:
        rtol, atol = float(request["rtol"]), float(request["atol"])
        on_host = [layer.to_host(out) for out in outputs]
        result["compares"] = child.output_compares(
            impl.OUTPUT_NAMES, inputs, goldens, on_host, rtol, atol
        )
    result["status"] = "ok"
    return result


def _warmup_and_warm_runs(
    layer: DeviceLayer, kernel: Any, inputs: list[Any], outputs: list[Any], runs_folder: Path
) -> dict[str, Any] | None:
    """The warm-up, then the warm runs (outputs zeroed before each), each run's stdout and
    profile kept in its folder; what the result gets when a run fails or leaves no profile,
    else None."""
    for name in run_names():
        phase.report(f"{name} on the NPU" + (" (compiles first)" if name == "warmup" else ""))
        folder = runs_folder / name
        folder.mkdir()
        try:
            for out in outputs:
                out.zero_()
            with stdout_to(folder / artefacts.STDOUT):
                layer.run(kernel, [*inputs, *outputs])
        except Exception as e:  # noqa: BLE001 - the kernel's own failure, classified by the parent
            return {"error": child.error_chain(e), "traceback": traceback.format_exc()[-4000:]}
        if not collect_profile(layer.profile_folder(), folder):
            return {
                "status": "no-profile",
                "error": f"{name} wrote no profile ({', '.join(artefacts.PROFILE_FILES[:3])}): "
                "check that pypto's runtime_debug_mode=1 took effect (its log says 'aicore "
                "profiling is opened') and that python3 can run pypto's draw_swim_lane.py",
            }
    return None
