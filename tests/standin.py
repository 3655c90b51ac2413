"""A stand-in verifier for the tests of where runs go (tools/devices.py, tools/farm.py): the
PyPTO adapter's place in SPEC.md, without PyPTO or an NPU.

Its time is a pure function of the config (as the shared fake verifier of
tests/test_measure_cache.py), so every way of running it records the same campaign. Each run
appends one JSON line to `runs.jsonl` beside the script: the config, the NPU variables it saw,
and when it ran (wall clock; these tests compare the intervals of processes of one host). Its
mode, the first argument, says how long it takes:
- `sleep:S`: sleeps S seconds (the machine's cores are few: a run that computed would slow
  every other one, a sleeping one stands for an NPU doing the work);
- `adapter:P:M`: as the adapter on a pinned NPU: prepares for P seconds, then measures for M
  seconds holding the NPU's lock named by $TUNE_LEDGER_DEVICE_LOCK.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from cli_harness import OP
from test_measure_cache import _spec

REPO = Path(__file__).resolve().parent.parent

SCRIPT = """
    import fcntl, hashlib, json, os, pathlib, sys, time
    mode, op_dir, config = sys.argv[1], pathlib.Path(sys.argv[2]), json.loads(sys.argv[3])
    kind, *seconds = mode.split(":")
    record = {"config": config, "pid": os.getpid(), "start": time.time()}
    for name in ("ASCEND_RT_VISIBLE_DEVICES", "TILE_FWK_DEVICE_ID", "TUNE_LEDGER_DEVICE_LOCK"):
        record[name] = os.environ.get(name)
    if kind == "adapter":
        time.sleep(float(seconds[0]))
        fd = os.open(os.environ["TUNE_LEDGER_DEVICE_LOCK"], os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        record["measure_start"] = time.time()
        time.sleep(float(seconds[1]))
        record["measure_end"] = time.time()
        os.close(fd)
    else:
        time.sleep(float(seconds[0]))
    record["end"] = time.time()
    with open(pathlib.Path(__file__).with_name("runs.jsonl"), "a") as log:
        log.write(json.dumps(record, sort_keys=True) + "\\n")
    digest = hashlib.sha256((op_dir / "sm_impl.py").read_bytes()).hexdigest()
    tile = config.get("vec_tile_shape", [1, 8, 1, 64])
    volume = tile[0] * tile[1] * tile[2] * tile[3]
    print(json.dumps({
        "config": config, "impl_digest": digest, "tool": "stand-in", "tool_version": "1",
        "times_us": [round(40960.0 / volume + 1.0, 3)], "layout_exit": 0,
        "outputs": [{"name": "y", "all_close": True, "max_diff": 0.0}],
    }))
"""


def write_script(folder: Path) -> Path:
    """The stand-in verifier in `folder` (its runs are logged beside it), and a kernel beside
    it, so that `folder` also serves as the op folder of a run started by hand."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sm_impl.py").write_text("def kernel(x):\n    return x\n", "utf-8")
    script = folder / "standin.py"
    script.write_text(textwrap.dedent(SCRIPT), "utf-8")
    return script


def runs(script: Path) -> list[dict[str, Any]]:
    """Every run of the stand-in so far, as it logged it."""
    log = script.with_name("runs.jsonl")
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text("utf-8").splitlines()]


def op_root(base: Path, name: str, script: Path, mode: str) -> Path:
    """A root whose op `sm` the autopilot can run end to end: two knobs in two stages, the
    stand-in as its verifier, a layout check that passes."""
    op_dir = base / name / "custom" / OP
    op_dir.mkdir(parents=True)
    (op_dir / "sm_impl.py").write_text("def kernel(x):\n    return x\n", "utf-8")
    (op_dir / "layout_check.py").write_text("import sys\nsys.exit(0)\n", "utf-8")
    spec = _spec(script, mode).replace(
        "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n",
        "  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}\n"
        "  device_sched_mode: {stage: swimlane, domain: [0, 1, 2, 3], default: 0}\n",
    )
    (op_dir / "SPEC.md").write_text(spec, "utf-8")
    return base / name


def autopilot(root: Path, cache: Path, *options: str, env: dict[str, str] | None = None) -> str:
    """`python -m tools.autopilot` on the root's op with `options`; its stdout (exit 0 asserted)."""
    argv = [sys.executable, "-m", "tools.autopilot", "--root", str(root), "--op", OP, *options]
    environ = {
        **os.environ,
        "TUNE_LEDGER_MEASURE_CACHE": str(cache),
        "PYTHONPATH": str(REPO),
        **(env or {}),
    }
    done = subprocess.run(
        argv, cwd=REPO, env=environ, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def summary(stdout: str) -> dict[str, Any]:
    """The autopilot's closing summary (its JSON line)."""
    return dict(json.loads(next(line for line in stdout.splitlines() if line.startswith("{"))))


def overlapping(intervals: list[tuple[float, float]]) -> list[tuple[Any, ...]]:
    """The pairs of intervals that overlap."""
    ordered = sorted(intervals)
    return [(a, b) for n, a in enumerate(ordered) for b in ordered[n + 1 :] if b[0] < a[1]]
