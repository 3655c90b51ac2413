"""R3's last source of a target, measured: the op's torch reference run eagerly (issue 29.6).

Where SPEC.md declares no budget, R3 takes the target from a comparable upstream kernel, else
from torch eager. `target --from-spec` runs the command SPEC.md's `target_fallbacks` names for
it and records the times it prints with their provenance. This is that command for torch
eager: the op's `<op>_golden.py` (`make_inputs`, `golden`) on the P0 shape,

- on the simulator's host: on the CPU, one warm-up and three timed runs (`perf_counter`);
- on an NPU (`ASCEND_HOME_PATH` set, or `--run-mode npu`): the inputs on the NPU, one warm-up
  step and three active steps under torch_npu's profiler, each step's time the sum of its
  kernels' `Duration(us)` in the profiler's `kernel_details.csv` (device time, not the host's
  launch overhead).

    python -m tools.pypto.reference --op-dir custom/softmax --json

Prints one JSON document: `times_us` (one per timed run), `source: torch-eager`, `method`,
`tool`/`tool_version` (torch) and `device`. Exit 0; 2 bad arguments; 4 the NPU could not be
used (the message says what to check).
"""

from __future__ import annotations

import csv
import io
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from . import device
from .spec import SpecError, load_spec

WARMUPS, RUNS = 1, 3
DURATION = "Duration(us)"
STEP = "Step Id"


class ReferenceFailure(ValueError):
    """A profile the parser cannot read, or a run that cannot be made (what to check)."""


def time_calls(
    call: Callable[[], object],
    *,
    warmups: int = WARMUPS,
    runs: int = RUNS,
    clock: Callable[[], float] = time.perf_counter,
) -> list[float]:
    """µs of each of `runs` calls after `warmups` untimed ones, by `clock` (seconds)."""
    for _ in range(warmups):
        call()
    samples = []
    for _ in range(runs):
        start = clock()
        call()
        samples.append((clock() - start) * 1e6)
    return samples


def parse_kernel_details(text: str, source: str = "kernel_details.csv") -> list[float]:
    """Each profiled step's device time in µs: the sum of its kernels' `Duration(us)`, in step
    order (`Step Id`; a file without steps is one step). ReferenceFailure when the file has no
    such column or a duration is not a number."""
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or DURATION not in rows[0]:
        raise ReferenceFailure(f"{source}: no {DURATION!r} column (is it the NPU profiler's?)")
    steps: dict[int, float] = {}
    for number, row in enumerate(rows, 2):
        raw_step = (row.get(STEP) or "").strip()
        try:
            step = int(raw_step) if raw_step else 0
            duration = float(row[DURATION])
        except ValueError as e:
            raise ReferenceFailure(f"{source}:{number}: {e}") from e
        if not duration >= 0:
            raise ReferenceFailure(f"{source}:{number}: {DURATION} {duration!r} is not >= 0")
        steps[step] = steps.get(step, 0.0) + duration
    return [steps[step] for step in sorted(steps)]


def cpu_device() -> dict[str, Any]:
    """The `device` of a run on this host's CPU (torch eager where there is no NPU)."""
    return {
        "run_mode": "cpu",
        "soc": platform.processor() or platform.machine() or None,
        "id": None,
        "cann": None,
        "driver": None,
    }


def eager_cpu(golden: Callable[..., Any], inputs: Sequence[Any]) -> list[float]:
    """torch eager on the CPU: one warm-up, then three timed runs."""
    return time_calls(lambda: golden(*inputs))


def eager_npu(golden: Callable[..., Any], inputs: Sequence[Any], folder: Path) -> list[float]:
    """torch eager on the NPU under torch_npu's profiler: one warm-up step, three active
    steps; each step's kernel time from `kernel_details.csv`."""
    try:
        import torch_npu
    except ImportError as e:
        raise ReferenceFailure(f"torch_npu cannot be imported ({e}): install it beside CANN") from e
    on_npu = [x.to("npu") if hasattr(x, "to") else x for x in inputs]
    profiler = torch_npu.profiler
    schedule = profiler.schedule(wait=0, warmup=WARMUPS, active=RUNS, repeat=1)
    with profiler.profile(
        activities=[profiler.ProfilerActivity.NPU],
        schedule=schedule,
        on_trace_ready=profiler.tensorboard_trace_handler(str(folder)),
    ) as prof:
        for _ in range(WARMUPS + RUNS):
            golden(*on_npu)
            torch_npu.npu.synchronize()
            prof.step()
    found = sorted(folder.rglob("kernel_details.csv"))
    if not found:
        raise ReferenceFailure(f"the NPU profiler wrote no kernel_details.csv under {folder}")
    return parse_kernel_details(found[-1].read_text(encoding="utf-8"), str(found[-1]))[-RUNS:]


def document(
    op_dir: Path,
    *,
    shape: list[int] | None,
    dtype: str | None,
    seed: int,
    run_mode: str,
    environ: Mapping[str, str],
) -> dict[str, Any]:
    """Time the op's torch reference on the P0 shape; the measurement document."""
    import importlib.util

    import torch

    spec = load_spec(op_dir, shape, dtype)
    path = spec.golden_path
    module_spec = importlib.util.spec_from_file_location(f"_tune_ledger_ref_{spec.op_name}", path)
    if module_spec is None or module_spec.loader is None:
        raise ReferenceFailure(f"cannot load {path}")
    gold = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(gold)
    inputs = gold.make_inputs(spec.p0_shape, spec.dtype, seed)
    if run_mode == device.NPU:
        with tempfile.TemporaryDirectory(prefix="tune-ledger-ref-") as folder:
            samples = eager_npu(gold.golden, inputs, Path(folder))
        method = (
            f"torch eager on the NPU: {WARMUPS} warm-up + {RUNS} profiled steps, "
            f"kernel_details.csv {DURATION} per step"
        )
        where = device.describe(device.NPU, environ)
    else:
        samples = eager_cpu(gold.golden, inputs)
        method = f"torch eager on the host CPU: {WARMUPS} warm-up + {RUNS} timed runs"
        where = cpu_device()
    return {
        "times_us": [round(s, 3) for s in samples],
        "source": "torch-eager",
        "method": method,
        "tool": "torch",
        "tool_version": torch.__version__,
        "shape": spec.p0_shape,
        "dtype": spec.dtype,
        "device": where,
    }


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--op-dir", type=click.Path(path_type=Path, file_okay=False), required=True)
@click.option("--shape", help="Input shape as JSON (default: the first p0_shapes entry).")
@click.option("--dtype", help="Input dtype (default: the first supported_dtypes entry).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--run-mode",
    type=click.Choice(list(device.RUN_MODES)),
    help="npu: on the NPU with its profiler; sim: on the host CPU (default: npu when "
    "ASCEND_HOME_PATH is set, as PyPTO chooses).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document.")
def main(
    op_dir: Path,
    shape: str | None,
    dtype: str | None,
    seed: int,
    run_mode: str | None,
    as_json: bool,
) -> None:
    """Time the op's torch reference eagerly (R3's torch-eager target source)."""
    import os

    try:
        shape_value = json.loads(shape) if shape else None
        mode = device.resolve_run_mode(run_mode, os.environ)
        doc = document(
            op_dir, shape=shape_value, dtype=dtype, seed=seed, run_mode=mode, environ=os.environ
        )
    except (SpecError, ValueError) as e:
        code = 4 if isinstance(e, ReferenceFailure) else 2
        if as_json:
            click.echo(json.dumps({"error": str(e), "code": code}))
        else:
            click.echo(f"error: {e}", err=True)
        sys.exit(code)
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True, allow_nan=False))
    else:
        click.echo(f"{doc['method']}: {', '.join(f'{t:g}' for t in doc['times_us'])} µs")


if __name__ == "__main__":
    main()
