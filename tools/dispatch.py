"""Where an autopilot's verifier runs go: processes of this host (`--workers N`), its NPUs one
measurement at a time each (`--devices 0,1,...`, tools/devices.py), or a Ray cluster's NPUs
(`--executor ray`, tools/farm.py). Wherever they run, the autopilot's process alone writes the
ledger, and records the same attempts and verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from attrs import frozen

from ledger.shell.measure import Executor, run_here

from . import devices, farm

ExecutorName = Literal["local", "ray"]


@frozen
class Placement:
    """The autopilot's options of where runs go (what the command line said)."""

    workers: int | None = None  # None: the default of the executor
    devices: tuple[int, ...] | None = None
    executor: ExecutorName = "local"
    ray_address: str | None = None


ONE_WORKER = Placement(workers=1)  # each config run here when the ledger measures it


@frozen
class Dispatch:
    """Measure-ahead's workers (each its executor) and the executor of the ledger's own runs
    (the pending attempt's measure, the baseline, the compare)."""

    workers: tuple[Executor, ...]
    ledger: Executor
    label: str  # for the closing summary: "local", "devices 0,1", "ray"
    ray: farm.OnRay | None = None  # the Ray executor, which counts where its tasks ran


def dispatch(
    placement: Placement, *, verifier_locks: bool, pythonpath: Sequence[str], cores: int
) -> Dispatch:
    """The executors `placement` asks for. `verifier_locks`: the verifier holds an NPU's lock
    itself while it measures (the PyPTO adapter); `pythonpath`: the folders Ray's workers import
    tools from; `cores`: the default number of local workers. Raises farm.FarmUnavailable when
    Ray cannot be used."""
    if placement.executor == "ray":
        on_cluster = farm.connect(placement.ray_address, pythonpath)
        on_ray = farm.OnRay()
        workers = placement.workers or on_cluster
        return Dispatch(workers=(on_ray,) * workers, ledger=on_ray, label="ray", ray=on_ray)
    if placement.devices is not None:
        folder = devices.lock_folder()
        pinned = placement.devices
        return Dispatch(
            workers=tuple(devices.worker_executors(pinned, folder, verifier_locks)),
            ledger=devices.OnDevices(npus=pinned, folder=folder),
            label="devices " + ",".join(str(npu) for npu in pinned),
        )
    workers = placement.workers or cores
    return Dispatch(workers=(run_here,) * workers, ledger=run_here, label="local")
