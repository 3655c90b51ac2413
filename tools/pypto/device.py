"""Which device a run measures on: the run mode, as PyPTO chooses it, and the device's identity.

PyPTO runs a kernel on an NPU when a CANN toolkit is configured (`ASCEND_HOME_PATH` set) and in
its simulator otherwise; `--run-mode` forces one. Every measurement document names its device
(`device: {run_mode, soc, id, cann, driver}`, each null when unknown), so that the ledger never
compares two devices. The simulator is one device everywhere: its identity is a constant.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

SIM, NPU = "sim", "npu"
RUN_MODES = (SIM, NPU)
HOME_ENV = "ASCEND_HOME_PATH"  # set by CANN's set_env.sh; PyPTO's switch to NPU mode
DEVICE_ID_ENV = "TILE_FWK_DEVICE_ID"  # PyPTO's device id (an index among the visible NPUs)
VISIBLE_ENV = "ASCEND_RT_VISIBLE_DEVICES"  # the physical NPUs a process sees, in order
# A lock file whose flock stands for the NPU: whoever measures on it holds it (tools/devices.py
# hands a pinned run its path; the run then holds it only while it measures on the device).
LOCK_ENV = "TUNE_LEDGER_DEVICE_LOCK"
# pypto 0.2.0's cost model (PYPTO.md): an Ascend 910B-class part, 24 cube + 48 vector cores.
SIM_SOC = "Ascend910B (pypto cost model: 24 AIC + 48 AIV @ 1.8 GHz)"
DRIVER_ROOT = Path("/usr/local/Ascend")  # where the driver installs when no ancestor has it
_VERSION_LINE = re.compile(r"^\s*version\s*=\s*(\S.*?)\s*$", re.IGNORECASE | re.MULTILINE)


def resolve_run_mode(forced: str | None, environ: Mapping[str, str]) -> str:
    """`forced` when given, else PyPTO's own choice: NPU when a CANN toolkit is configured."""
    if forced is not None:
        return forced
    return NPU if environ.get(HOME_ENV) else SIM


def describe(run_mode: str, environ: Mapping[str, str], soc: str | None = None) -> dict[str, Any]:
    """The `device` object of a measurement: constant for the simulator; on an NPU, `soc` as
    the run reported it, the physical device id and the CANN and driver versions."""
    if run_mode == SIM:
        return {"run_mode": SIM, "soc": SIM_SOC, "id": None, "cann": None, "driver": None}
    home = environ.get(HOME_ENV)
    return {
        "run_mode": NPU,
        "soc": soc,
        "id": physical_device_id(environ),
        "cann": cann_version(Path(home)) if home else None,
        "driver": driver_version(Path(home) if home else None),
    }


def recorded(run_mode: str, record: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `device` object a run folder's `device.json` gives (a kept device run); fields it
    lacks are null, never taken from this machine."""
    if run_mode == SIM:
        return describe(SIM, {})
    record = record or {}

    def field(name: str, kind: type) -> Any:
        value = record.get(name)
        return value if isinstance(value, kind) and not isinstance(value, bool) else None

    return {
        "run_mode": NPU,
        "soc": field("soc", str),
        "id": field("id", int),
        "cann": field("cann", str),
        "driver": field("driver", str),
    }


def logical_device_id(environ: Mapping[str, str]) -> int:
    """PyPTO's device index (`TILE_FWK_DEVICE_ID`, default 0); ValueError when not an int."""
    text = environ.get(DEVICE_ID_ENV, "0").strip() or "0"
    if not text.isdigit():
        raise ValueError(f"{DEVICE_ID_ENV} must be a device index (0, 1, ...), got {text!r}")
    return int(text)


def physical_device_id(environ: Mapping[str, str]) -> int | None:
    """The NPU's physical number: the `TILE_FWK_DEVICE_ID`-th entry of
    `ASCEND_RT_VISIBLE_DEVICES` when that is set, else the index itself; None when unreadable."""
    try:
        index = logical_device_id(environ)
    except ValueError:
        return None
    visible = environ.get(VISIBLE_ENV)
    if visible is None or not visible.strip():
        return index
    entries = [entry.strip() for entry in visible.split(",")]
    if index >= len(entries) or not entries[index].isdigit():
        return None
    return int(entries[index])


def cann_version(home: Path) -> str | None:
    """The CANN toolkit's version under `home` (ASCEND_HOME_PATH): `compiler/version.info`'s
    `Version=`, else an `<arch>-linux/ascend_toolkit_install.info`'s `version=`, else the
    `cann-X.Y.Z` in the folder's real name; None when none says."""
    candidates = [home / "compiler" / "version.info"]
    candidates += sorted(home.glob("*-linux/ascend_toolkit_install.info"))
    for path in candidates:
        found = _version_in(path)
        if found:
            return found
    match = re.search(r"cann-(\d[\w.]*)", os.path.realpath(home))
    return match.group(1) if match else None


def driver_version(home: Path | None) -> str | None:
    """The NPU driver's version: `driver/version.info` in the nearest ancestor of the toolkit
    that has one (CANN installs beside the driver: /usr/local/Ascend/{driver,ascend-toolkit}),
    else in /usr/local/Ascend; None when none says."""
    roots = list(home.resolve().parents) if home is not None else []
    for root in [*roots, DRIVER_ROOT]:
        found = _version_in(root / "driver" / "version.info")
        if found:
            return found
    return None


def _version_in(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > 1 << 16:
            return None
        match = _VERSION_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    return match.group(1) if match else None


def open_lock(path: Path) -> int:
    """A descriptor of the NPU's lock file, made when missing; never through a link (the
    folder may be shared by every user of the host). OSError when it cannot be opened."""
    # Read-only is enough for flock, so another user's lock file can be opened too.
    flags = os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    return os.open(path, flags, 0o666)


@contextlib.contextmanager
def measuring_alone(environ: Mapping[str, str]) -> Iterator[None]:
    """Hold the NPU's lock ($TUNE_LEDGER_DEVICE_LOCK) for the duration, waiting for the run
    that holds it to finish; without the variable, nothing is held."""
    path = environ.get(LOCK_ENV)
    if not path:
        yield
        return
    fd = open_lock(Path(path))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
