"""Verifier runs pinned to the NPUs of this host (`--devices 0,1,...`), one measurement at a
time on each NPU.

A run pinned to NPU n sees that NPU only (`ASCEND_RT_VISIBLE_DEVICES=n`) and addresses it as
PyPTO's device 0 (`TILE_FWK_DEVICE_ID=0`), so the adapter's document names physical NPU n.

Each NPU is a lock file, `npu<n>.lock` under `$TUNE_LEDGER_DEVICE_LOCKS` (default
`/tmp/tune-ledger-devices`: per host, as the NPUs are); whoever measures on NPU n holds its
flock, so measure-ahead's workers, the ledger's own runs and another autopilot on this host never
measure on one NPU at once. Who holds it:

- the ledger's own runs (the pending attempt when the measurement cache has no result for it,
  the baseline, the compare): the executor, for the whole run, before the verifier starts, so
  that waiting for an NPU never counts toward the verifier's wall-time limit;
- measure-ahead's runs of a verifier that takes the lock itself (the PyPTO adapter, which holds
  it from the warm-up to its last warm run: tools/pypto/device_run.py): the verifier, told the
  lock's path in `$TUNE_LEDGER_DEVICE_LOCK`. Each NPU then has two workers: while one measures,
  the other prepares on the CPU (interpreter, inputs, goldens) or finishes (host compare,
  parsing, layout check). Such a run waits for the NPU inside its wall time; one that times out
  waiting is not cached (timeouts never are), so it never reaches the ledger, whose own run of
  that config measures it again;
- measure-ahead's runs of any other verifier: the executor, for the whole run; one worker per
  NPU.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from attrs import frozen

from ledger import processes
from ledger.shell.measure import Cancel

from .pypto import device

LOCKS_ENV = "TUNE_LEDGER_DEVICE_LOCKS"  # the folder of the NPUs' lock files
POLL_S = 0.05  # how often a run waiting for an NPU looks again (and sees a cancel)


class Cancelled(Exception):
    """A run cancelled while it waited for its NPU: it never started."""


def parse_devices(text: str) -> tuple[int, ...]:
    """The NPU ids of `--devices` ("0,1,3"); ValueError naming what is wrong."""
    ids = []
    for entry in text.split(","):
        entry = entry.strip()
        if not entry.isdigit():
            raise ValueError(f"{entry!r} is not an NPU id: give ids like 0,1,3 (`npu-smi info`)")
        ids.append(int(entry))
    if len(set(ids)) != len(ids):
        raise ValueError(f"an NPU is named twice in {text!r}: one worker per NPU")
    return tuple(ids)


def lock_folder(environ: Mapping[str, str] | None = None) -> Path:
    """Where the NPUs' lock files are ($TUNE_LEDGER_DEVICE_LOCKS, else one folder in /tmp)."""
    chosen = (os.environ if environ is None else environ).get(LOCKS_ENV)
    if chosen:
        return Path(chosen)
    return Path(tempfile.gettempdir()) / "tune-ledger-devices"


def lock_path(folder: Path, npu: int) -> Path:
    """NPU `npu`'s lock file, made when missing, in its folder (made writable by every user of
    the host, as /tmp is). OSError when it cannot be made."""
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            folder.chmod(0o1777)
    path = folder / f"npu{npu}.lock"
    os.close(device.open_lock(path))
    return path


def pinned(env: Mapping[str, str] | None, npu: int, lock: Path | None) -> dict[str, str]:
    """`env` (default: this process's) for a run on NPU `npu` alone; `lock`: the lock file the
    run holds itself while it measures (None: the caller holds it)."""
    pinned_env = dict(os.environ if env is None else env)
    pinned_env[device.VISIBLE_ENV] = str(npu)
    pinned_env[device.DEVICE_ID_ENV] = "0"  # the one NPU the process sees
    pinned_env.pop(device.LOCK_ENV, None)
    if lock is not None:
        pinned_env[device.LOCK_ENV] = os.fspath(lock)
    return pinned_env


@contextlib.contextmanager
def claimed(locks: Sequence[Path], cancelled: threading.Event) -> Iterator[int]:
    """Hold the first of `locks` that is free, waiting until one is; the index of the one held.
    Raises Cancelled when `cancelled` is set while waiting."""
    fds = [device.open_lock(path) for path in locks]
    try:
        while True:
            for index, fd in enumerate(fds):
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                yield index
                return
            if cancelled.wait(POLL_S):
                raise Cancelled("cancelled while waiting for an NPU")
    finally:
        for fd in fds:
            os.close(fd)  # releases the lock held


@frozen
class OnDevices:
    """An executor (ledger/shell/measure.py `Executor`) that runs each verifier pinned to one
    of `npus`: holding the NPU's lock for the whole run, or, when `verifier_locks`, handing the
    verifier the lock to hold while it measures (then `npus` is one worker's single NPU)."""

    npus: tuple[int, ...]
    folder: Path
    verifier_locks: bool = False

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None,
        limits: processes.Limits,
        on_start: Callable[[Cancel], None] | None,
    ) -> processes.Finished:
        cancelled = threading.Event()
        groups: list[int] = []

        def cancel() -> None:
            cancelled.set()
            for group in list(groups):
                processes.kill_group(group)

        def started(group: int) -> None:
            groups.append(group)
            if cancelled.is_set():
                processes.kill_group(group)

        if on_start is not None:
            on_start(cancel)  # also while the run still waits for its NPU
        locks = [lock_path(self.folder, npu) for npu in self.npus]
        if self.verifier_locks:
            run_env = pinned(env, self.npus[0], locks[0])
            return processes.run(argv, cwd=cwd, env=run_env, limits=limits, on_start=started)
        with claimed(locks, cancelled) as index:
            run_env = pinned(env, self.npus[index], None)
            return processes.run(argv, cwd=cwd, env=run_env, limits=limits, on_start=started)


def worker_executors(npus: Sequence[int], folder: Path, verifier_locks: bool) -> list[OnDevices]:
    """Measure-ahead's workers on `npus`: two per NPU when the verifier holds the lock itself
    (one measures while the other prepares), else one."""
    per_npu = 2 if verifier_locks else 1
    return [
        OnDevices(npus=(npu,), folder=folder, verifier_locks=verifier_locks)
        for _ in range(per_npu)
        for npu in npus
    ]
