"""Verifier runs on the NPUs of a Ray cluster (`--executor ray`; the optional extra `farm`).

Each run is one Ray task that asks for one of Ray's `NPU` resources (Ray's own name for an
Ascend NPU: a node started on an Ascend host counts its NPUs, and Ray sets
`ASCEND_RT_VISIBLE_DEVICES` in the task to the NPU it was given). The task runs the verifier
with the one process runner (ledger/processes.py: its own process group, the wall-time limit,
bounded output) and hands back what ran as JSON text. The process that runs the autopilot is
the only one that writes the ledger: it keeps the result in its measurement cache and records
it as it records a run of its own host. Ray holds no state of ours: a task is a function of its
request, nothing stays in Ray past the call, and a lost task is a harness error (nothing
written), never retried by Ray.

What the cluster shares with the autopilot's host (assumed, not checked):
- the repository checkout at the same path: the verifier runs in the root and reads the op
  folder there (the adapter writes its run folders to a temporary folder of its node);
- the same Python environment at the same path (the verifier template's `{python}`: pypto,
  torch, tune-ledger): the measurement cache keys a run on this host's interpreter's versions.

A task's environment is its node's, plus what the autopilot added to its own for the verifier
(PYTHONPATH, the measurement cache's setting), less what names something of this host (the
progress file, the warm worker's socket, a pinned NPU), plus `TILE_FWK_DEVICE_ID=0`: the one
NPU Ray made visible to it.
"""

from __future__ import annotations

import base64
import collections
import functools
import json
import os
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ledger import processes
from ledger.shell import harness
from ledger.shell.measure import Cancel

from .devices import Cancelled
from .pypto import device, phase, warm

EXTRA = "pip install 'tune-ledger[farm]'"
RESOURCE = "NPU"  # Ray's built-in resource name for an Ascend NPU
# Names of this host's things: never sent to a task on another node.
HOST_ONLY = (phase.ENV, warm.ENV, device.VISIBLE_ENV, device.DEVICE_ID_ENV, device.LOCK_ENV)
_FIX = "check the cluster (`ray status`: nodes alive, NPUs free), then run the campaign again"


class FarmUnavailable(Exception):
    """Ray cannot be used: it is not installed, or the cluster has no NPU."""


def require_ray() -> Any:
    """The `ray` module; FarmUnavailable naming the extra when it is not installed."""
    try:
        import ray
    except ImportError as e:
        raise FarmUnavailable(
            f"--executor ray needs Ray, which is not installed ({e}): {EXTRA}"
        ) from e
    return ray


def connect(address: str | None, pythonpath: Sequence[str]) -> int:
    """Join the Ray cluster at `address` (None: Ray's choice, $RAY_ADDRESS or a new local one)
    unless this process already has; how many NPUs it has. Its workers import this module from
    `pythonpath` (the checkout, at the same path on every node)."""
    ray = require_ray()
    if not ray.is_initialized():
        runtime_env = {"env_vars": {"PYTHONPATH": os.pathsep.join(pythonpath)}}
        ray.init(address=address, runtime_env=runtime_env, include_dashboard=False)
    npus = int(ray.cluster_resources().get(RESOURCE, 0))
    if npus < 1:
        raise FarmUnavailable(
            f"the Ray cluster has no {RESOURCE} resource: start its nodes on Ascend hosts "
            f"(Ray counts their NPUs), or give them with `ray start --resources "
            f"'{{\"{RESOURCE}\": 8}}'`"
        )
    return npus


class OnRay:
    """An executor (ledger/shell/measure.py `Executor`) that runs each verifier in a Ray task
    holding one NPU; cancelling it interrupts the task, whose runner then kills the run."""

    def __init__(self) -> None:
        self._ray = require_ray()
        # max_retries=0: a task lost with its node is reported, not run a second time unseen.
        self._task = self._ray.remote(resources={RESOURCE: 1}, max_retries=0)(run_task)
        self._lock = threading.Lock()
        self.placements: collections.Counter[str] = collections.Counter()  # "host/NPU": runs

    def __call__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None,
        limits: processes.Limits,
        on_start: Callable[[Cancel], None] | None,
    ) -> processes.Finished:
        request = {
            "argv": list(argv),
            "cwd": os.fspath(cwd),
            "env": task_environment(env),
            "wall_s": limits.wall_s,
            "memory_mb": limits.memory_mb,
            "output_bytes": limits.output_bytes,
        }
        ref = self._task.remote(json.dumps(request, sort_keys=True))
        if on_start is not None:
            on_start(functools.partial(self._ray.cancel, ref))
        try:
            reply = self._ray.get(ref)
        except self._ray.exceptions.TaskCancelledError as e:
            raise Cancelled("the Ray task was cancelled") from e
        except self._ray.exceptions.RayError as e:
            raise harness.harness_error(
                f"the Ray task that ran the verifier was lost ({type(e).__name__}: "
                f"{str(e).strip().splitlines()[0] if str(e).strip() else ''})",
                _FIX,
                pending=None,
            ) from e
        except BaseException:
            self._ray.cancel(ref)  # Ctrl-C here: the run on the cluster goes too
            raise
        answer = json.loads(reply)
        with self._lock:
            self.placements[f"{answer.get('host')}/NPU {answer.get('npu')}"] += 1
        return finished(answer, argv)


def task_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """What a task adds to its node's environment: what the autopilot set for the verifier
    that differs from this process's environment, less this host's own things."""
    if env is None:
        return {}
    return {
        name: value
        for name, value in env.items()
        if os.environ.get(name) != value and name not in HOST_ONLY
    }


def run_task(request_text: str) -> str:
    """On a Ray worker: run the request's verifier on the NPU Ray gave the task; what ran, as
    JSON text (plain data only crosses the cluster)."""
    import ray  # on a Ray worker, Ray is there

    request = json.loads(request_text)
    env = {**os.environ, **request["env"], device.DEVICE_ID_ENV: "0"}
    # The NPU Ray gave the task, also where a node opted out of Ray's setting the variable
    # (RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES).
    given = ray.get_runtime_context().get_accelerator_ids().get(RESOURCE) or []
    if given:
        env[device.VISIBLE_ENV] = ",".join(str(npu) for npu in given)
    limits = processes.Limits(
        wall_s=request["wall_s"],
        memory_mb=request["memory_mb"],
        output_bytes=request["output_bytes"],
    )
    try:
        # tether: a worker that dies (a forced cancel, a lost node) takes the verifier along.
        done = processes.run(
            request["argv"], cwd=request["cwd"], env=env, limits=limits, tether=True
        )
    except OSError as e:
        kind = {FileNotFoundError: "not-found", PermissionError: "not-executable"}.get(
            type(e), "os-error"
        )
        return json.dumps({"error": kind, "errno": e.errno, "detail": str(e)})
    return json.dumps(
        {
            "exit_code": done.exit_code,
            "output": base64.b64encode(done.output).decode("ascii"),
            "errors": base64.b64encode(done.errors).decode("ascii"),
            "output_digest": done.output_digest,
            "output_truncated": done.output_truncated,
            "duration_s": done.duration_s,
            "timed_out": done.timed_out,
            "over_memory": done.over_memory,
            "peak_rss_mb": done.peak_rss_mb,
            "host": socket.gethostname(),
            "npu": env.get(device.VISIBLE_ENV),
        },
        sort_keys=True,
    )


def finished(reply: dict[str, Any], argv: Sequence[str]) -> processes.Finished:
    """The run a task's reply describes; the OSError the task met when the verifier could not
    start (FileNotFoundError, PermissionError: the ledger's harness errors)."""
    error = reply.get("error")
    if error is not None:
        detail = str(reply.get("detail", ""))
        kind = {"not-found": FileNotFoundError, "not-executable": PermissionError}.get(
            str(error), OSError
        )
        raise kind(reply.get("errno") or 0, f"on the Ray node: {detail}")
    return processes.Finished(
        argv=tuple(argv),
        exit_code=int(reply["exit_code"]),
        output=base64.b64decode(reply["output"]),
        errors=base64.b64decode(reply["errors"]),
        output_digest=str(reply["output_digest"]),
        output_truncated=bool(reply["output_truncated"]),
        duration_s=float(reply["duration_s"]),
        timed_out=bool(reply["timed_out"]),
        over_memory=bool(reply["over_memory"]),
        peak_rss_mb=float(reply["peak_rss_mb"]),
    )
