"""Measuring one config: a child process under wall-time and memory limits, then its artefacts.

The imperative shell of the adapter. `measure()` returns the measurement document (the JSON
schema is in tools/pypto/README.md) and the CLI exit code; it never raises for a failed run,
only for bad arguments (`UsageError`) and for a device that could not be used (`DeviceError`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from attrs import frozen

from ledger import processes

from . import artefacts, classify, device, host_verify_patch, numerics, phase, warm
from .metrics import ArtefactError
from .spec import OpSpec, SpecError, load_spec

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS = {device.SIM: "pypto-sim", device.NPU: "pypto-npu"}
SCHEMA_VERSION = 1
TIME_METRIC = "max_work_time_us"
EXIT_OK, EXIT_USAGE, EXIT_FAILED, EXIT_DEVICE = 0, 2, 3, 4
LAYOUT_TIMEOUT_S = 120
OUTPUT_TAIL = 4000


class UsageError(ValueError):
    """Bad arguments: an unknown op folder, a malformed config, an unknown knob."""


class DeviceError(RuntimeError):
    """The NPU could not be used (no CANN, no driver, no device): nothing was measured."""


@frozen
class Limits:
    wall_s: float = 300.0  # upstream counts a run over 300 s as failed
    memory_mb: float = 6144.0  # resident memory of the child and everything it starts


@frozen
class Request:
    op_dir: Path
    config: dict[str, Any]
    shape: list[int] | None = None
    dtype: str | None = None
    seed: int = 0
    numerics: bool = True
    verify_passes: str = "all"  # all | last | graph (see child.VERIFY_PASSES)
    layout: bool = True
    limits: Limits = Limits()
    keep_dir: Path | None = None
    python: str = sys.executable
    run_mode: str | None = None  # sim | npu; None: as PyPTO chooses (device.resolve_run_mode)
    msprof: bool = False  # wrap an NPU run in CANN's msprof (its op summary is parsed too)


@frozen
class ChildRun:
    result: dict[str, Any] | None
    returncode: int | None
    timed_out: bool
    over_memory: bool
    peak_rss_mb: float
    wall_s: float
    output_tail: str
    how: str = "cold"  # a new process, or a fork of the warm worker (warm.py), and why


def measure(request: Request) -> tuple[dict[str, Any], int]:
    """Run one config and return (measurement document, exit code)."""
    try:
        spec = load_spec(request.op_dir, request.shape, request.dtype)
    except SpecError as e:
        raise UsageError(str(e)) from e
    if not isinstance(request.config, dict):
        raise UsageError("the config must be a JSON object")
    request = attrs.evolve(request, run_mode=device.resolve_run_mode(request.run_mode, os.environ))
    if request.msprof and request.run_mode != device.NPU:
        raise UsageError("--msprof profiles a device run: it needs NPU mode (--run-mode npu)")
    if request.msprof and shutil.which("msprof") is None:
        raise DeviceError("--msprof: msprof is not on PATH; source CANN's set_env.sh")
    work = Path(tempfile.mkdtemp(prefix="tune-ledger-pypto-"))
    try:
        child = _run_child(spec, request, work)
        doc = _document(spec, request, child, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if doc.get("device_error"):
        raise DeviceError(doc["device_error"])
    if doc.get("error"):
        raise UsageError(doc["error"])
    return doc, EXIT_OK if doc["failure"] is None else EXIT_FAILED


def _run_child(spec: OpSpec, request: Request, work: Path) -> ChildRun:
    output_dir = work / "output"
    output_dir.mkdir()  # pypto refuses an output folder whose parent is missing
    request_path, result_path, log_path = (
        work / "request.json",
        work / "result.json",
        work / "child.log",
    )
    request_path.write_text(
        json.dumps(
            {
                "op_dir": os.fspath(spec.op_dir.resolve()),
                "op_name": spec.op_name,
                "shape": spec.p0_shape,
                "dtype": spec.dtype,
                "config": request.config,
                "seed": request.seed,
                "numerics": request.numerics,
                "verify_passes": request.verify_passes,
                "rtol": spec.rtol,
                "atol": spec.atol,
                "result_path": os.fspath(result_path),
                "run_mode": request.run_mode,
            }
        )
    )
    home = work / "home"  # pypto also logs under ~/.pypto and ~/ascend: keep that in `work`
    home.mkdir()
    env = child_environment(os.environ, output_dir=output_dir, home=home, run_mode=request.run_mode)
    log_path.touch()  # a fork that fails before it opens its output still leaves one to read
    started = time.monotonic()
    process: subprocess.Popen[bytes] | warm.WarmRun | None
    argv = [request.python, "-m", f"{__package__}.child", os.fspath(request_path)]
    if request.run_mode == device.NPU:
        # A fork would share the worker's runtime state, and a device wants one process.
        process, how = None, "cold (a device run is a process of its own)"
        if request.msprof:
            profile = output_dir / artefacts.DEVICE_RUNS / "msprof"
            profile.mkdir(parents=True)
            argv = ["msprof", f"--output={profile}", *argv]
    else:
        process, how = warm.start_run(
            kind="child",
            argv=argv[3:],
            cwd=work,
            env=env,
            python=request.python,
            stdout=log_path,
            stderr=log_path,
            home=home,
        )
    if process is None:
        process = processes.start(
            argv,
            cwd=work,
            env=env,
            log=log_path,
            tether=True,  # gone with the verifier (measure-ahead cancels the verifier's group)
        )  # its own process group: the limits cover its children
    limits = processes.Limits(wall_s=request.limits.wall_s, memory_mb=request.limits.memory_mb)
    try:
        watched = processes.watch(process, limits, started)
        process.wait()
    except warm.WarmLost as e:
        # No exit status to classify: the run is not trusted, and runs again as a process.
        processes.kill_group(process.pid)
        os.environ.pop(warm.ENV, None)
        for folder in (output_dir, home):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
        result_path.unlink(missing_ok=True)
        again = _run_child(spec, request, work)
        return attrs.evolve(again, how=f"{again.how} ({e})")
    processes.kill_group(process.pid)  # helpers the child left behind (none expected)
    wall = time.monotonic() - started
    result = json.loads(result_path.read_text()) if result_path.is_file() else None
    tail = log_path.read_bytes()[-OUTPUT_TAIL:].decode("utf-8", errors="replace")
    return ChildRun(
        result=result,
        returncode=process.returncode,
        timed_out=watched.timed_out,
        over_memory=watched.over_memory,
        peak_rss_mb=round(watched.peak_rss_mb, 1),
        wall_s=round(wall, 3),
        output_tail=tail,
        how=how,
    )


def child_environment(
    base: Mapping[str, str],
    *,
    output_dir: Path | None,
    home: Path | None,
    run_mode: str | None = None,
) -> dict[str, str]:
    """The environment of the kernel's child: `base`, the run's output folder and home, the
    calculator cache, and this repository importable. The warm worker is started in the same
    one (without a run's folders), so that its forks run where a new child would.

    A simulated run gets no ASCEND_HOME_PATH: pypto then loads the same libraries as on a host
    without CANN, so the simulator is one device everywhere (and the numerics workaround,
    host_verify_patch, applies as it was checked)."""
    env = {
        **base,
        "TUNE_LEDGER_PYPTO_CACHE": os.fspath(host_verify_patch.cache_root()),
        "PYTHONPATH": os.pathsep.join(
            p for p in (os.fspath(REPO_ROOT), base.get("PYTHONPATH")) if p
        ),
    }
    if device.resolve_run_mode(run_mode, base) == device.SIM:
        env.pop(device.HOME_ENV, None)
    if output_dir is not None:
        env["TILE_FWK_OUTPUT_DIR"] = os.fspath(output_dir)
    if home is not None:
        env["HOME"] = os.fspath(home)
    return env


def _document(spec: OpSpec, request: Request, child: ChildRun, work: Path) -> dict[str, Any]:
    result = child.result or {}
    status = result.get("status")
    if status == "config-error":
        return {"error": f"config rejected by {spec.impl_path.name}: {result['error']}"}
    if status == "impl-error":
        return {"error": str(result["error"])}
    if status == "device-error":
        return {"device_error": f"the NPU could not be used: {result['error']}"}
    doc = _skeleton(spec, request, child, result)
    failure = None
    if status == "numerics-error":
        failure = classify.Failure("runtime", "no numerics: " + str(result.get("error")))
    elif status == "no-profile":
        failure = classify.Failure("runtime", str(result.get("error")))
    elif status != "ok" or child.timed_out or child.over_memory:
        error_text = str(result.get("error") or "") or child.output_tail
        failure = classify.classify(
            timed_out=child.timed_out,
            over_memory=child.over_memory,
            returncode=child.returncode,
            error_text=error_text,
            wall_limit_s=request.limits.wall_s,
            memory_limit_mb=request.limits.memory_mb,
            peak_rss_mb=child.peak_rss_mb,
            log_text=_pypto_log(work),
        ) or classify.Failure(
            "runtime", f"the run ended without a result (exit {child.returncode})"
        )
        if request.keep_dir is not None:  # a failed run's folder (logs, output) for a person
            doc["artefact_dir"] = os.fspath(_keep(work, request.keep_dir))
    else:
        failure = _measured(doc, spec, request, result, work)
    if request.layout:
        phase.report("layout check")
        doc["layout_exit"], doc["layout_output"] = run_layout_check(spec, request)
        if failure is None and doc["layout_exit"] != 0:
            failure = classify.Failure("layout", f"layout_check.py exited {doc['layout_exit']}")
    doc["failure"] = (
        None if failure is None else {"category": failure.category, "detail": failure.detail}
    )
    return doc


def _pypto_log(work: Path, limit: int = 1 << 20) -> str:
    """pypto's own log of the run (it logs under $HOME/ascend/log, and HOME is `work/home`)."""
    texts = []
    for path in sorted((work / "home" / "ascend" / "log").rglob("*.log")):
        with contextlib.suppress(OSError):
            texts.append(path.read_bytes()[:limit].decode("utf-8", errors="replace"))
    return "\n".join(texts)


def _skeleton(
    spec: OpSpec, request: Request, child: ChildRun, result: dict[str, Any]
) -> dict[str, Any]:
    reported = result.get("device")
    soc = reported.get("soc") if isinstance(reported, dict) else None
    soc = soc if isinstance(soc, str) else None
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": TOOLS[str(request.run_mode)],
        "device": device.describe(str(request.run_mode), os.environ, soc),
        # A warm fork runs this interpreter, whose pypto matched the worker's (warm.py).
        "tool_version": warm.installed("pypto")
        if child.how == "warm"
        else _pypto_version(request.python),
        "op": spec.op_name,
        "shape": spec.p0_shape,
        "dtype": spec.dtype,
        "seed": request.seed,
        "config": result.get("config", request.config),
        # What the ledger binds the measurement to (R11): the bytes of the kernel that ran.
        "impl_digest": hashlib.sha256(spec.impl_path.read_bytes()).hexdigest(),
        "time_metric": TIME_METRIC,
        "time_us": None,
        "times_us": [],
        "util_pct": None,
        "bubble_pct": None,
        "metrics": {},
        "outputs": [],
        "artefacts": {},
        "env": {
            "host": platform.node(),
            "python": request.python,
            "torch": result.get("torch_version"),
            "numerics_patch": result.get("numerics_patch"),
        },
        "run": {
            "wall_s": child.wall_s,
            "peak_rss_mb": child.peak_rss_mb,
            "import_s": result.get("import_s"),
            "run_s": result.get("run_s"),
            "exit_code": child.returncode,
            "child": child.how,
            "wall_limit_s": request.limits.wall_s,
            "memory_limit_mb": request.limits.memory_mb,
        },
    }


def _measured(
    doc: dict[str, Any], spec: OpSpec, request: Request, result: dict[str, Any], work: Path
) -> classify.Failure | None:
    """Fill the document from the artefacts of a completed run; the failure it shows, if any."""
    phase.report("parse the run's artefacts")
    try:
        run = artefacts.read_run_folder(artefacts.find_run_folder(work / "output"))
    except (ArtefactError, OSError) as e:
        return classify.Failure("runtime", f"artefacts unreadable: {e}")
    fill_from_artefacts(doc, run)
    if run.run_mode == device.NPU:  # what --perf-dir on the kept folder says of its device
        (run.folder / artefacts.DEVICE_JSON).write_text(
            json.dumps(doc["device"], sort_keys=True) + "\n"
        )
    if request.keep_dir is not None:
        doc["artefact_dir"] = os.fspath(_keep(run.folder, request.keep_dir))
    if not request.numerics:
        doc["numerics"] = "skipped (--no-numerics): no accuracy evidence"
        return None
    compares = [numerics.OutputCompare(**c) for c in result.get("compares", [])]
    if request.run_mode == device.NPU:
        doc["numerics"] = "the device's outputs of the last warm run, compared on the host"
        doc["outputs"] = numerics.device_evidence(compares, spec.rtol, spec.atol)
        return _accuracy_failure(doc["outputs"])
    if run.verify_rows is None:
        return classify.Failure(
            "runtime", "pass-verify wrote no verify_result_brief.csv: no accuracy evidence"
        )
    doc["numerics"] = f"pass-verify on the host, passes checked: {request.verify_passes}"
    doc["outputs"] = numerics.output_evidence(compares, run.verify_rows, spec.rtol, spec.atol)
    return _accuracy_failure(doc["outputs"])


def _accuracy_failure(outputs: list[dict[str, Any]]) -> classify.Failure | None:
    bad = [o for o in outputs if not o["all_close"]]
    if bad:
        return classify.Failure("accuracy", "; ".join(f"{o['name']}: {o['reason']}" for o in bad))
    return None


def fill_from_artefacts(doc: dict[str, Any], run: artefacts.RunArtefacts) -> None:
    """Times, percentages, metrics, cross-check and digests of a parsed run folder."""
    figures = run.metrics
    # One sample in the simulator (it is deterministic), one per warm run on a device; the
    # time is their median, as the ledger compares medians.
    doc["times_us"] = list(run.times_us)
    doc["time_us"] = float(statistics.median(run.times_us))
    doc["util_pct"] = figures["util_pct"]
    doc["bubble_pct"] = figures["bubble_pct"]
    doc["metrics"] = {
        k: v for k, v in figures.items() if k not in (TIME_METRIC, "util_pct", "bubble_pct")
    }
    doc["metrics_source"] = run.metrics_source
    doc["crosscheck"] = run.crosscheck
    doc["artefacts"] = run.digests
    if run.verify_rows is not None:
        doc["pass_verify"] = numerics.pass_summary(run.verify_rows)


def _keep(folder: Path, keep_dir: Path) -> Path:
    keep_dir.mkdir(parents=True, exist_ok=True)
    name = folder.name
    if name == artefacts.DEVICE_RUNS:  # pypto names its own folders output_<time>; ours too
        name = f"output_npu_{time.strftime('%Y%m%d_%H%M%S')}_{os.getpid()}"
    target = keep_dir / name
    shutil.move(os.fspath(folder), os.fspath(target))
    return target.resolve()


def run_layout_check(spec: OpSpec, request: Request) -> tuple[int, str]:
    """The op's layout check on the config: (exit code, its output's tail)."""
    if not spec.layout_check_path.is_file():
        return 1, f"{spec.layout_check_path} is missing"
    # An op folder may live under any root; its checks import tools.pypto from this repository.
    repo = os.fspath(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH", "")) if p),
    }
    argv = [
        request.python,
        os.fspath(spec.layout_check_path),
        "--config",
        json.dumps(request.config),
    ]
    with tempfile.TemporaryDirectory(prefix="tune-ledger-layout-") as folder:
        stdout, stderr = Path(folder) / "stdout", Path(folder) / "stderr"
        forked, _how = warm.start_run(
            kind="script",
            argv=argv[1:],
            cwd=Path.cwd(),
            env=env,
            python=request.python,
            stdout=stdout,
            stderr=stderr,
        )
        if forked is not None:
            try:
                watched = processes.watch(
                    forked, processes.Limits(wall_s=LAYOUT_TIMEOUT_S), time.monotonic()
                )
            except warm.WarmLost:
                processes.kill_group(forked.pid)
            else:
                if watched.timed_out:
                    raise subprocess.TimeoutExpired(argv, LAYOUT_TIMEOUT_S)  # as a new process
                output = (stdout.read_bytes() + stderr.read_bytes()).decode(errors="replace")
                # As text=True reads it (universal newlines).
                output = output.replace("\r\n", "\n").replace("\r", "\n")
                return int(forked.wait()), output[-OUTPUT_TAIL:]
    done = processes.run(
        argv, env=env, limits=processes.Limits(wall_s=LAYOUT_TIMEOUT_S), separate_stderr=True
    )
    if done.timed_out:
        raise subprocess.TimeoutExpired(argv, LAYOUT_TIMEOUT_S)  # as subprocess.run does
    output = (done.output + done.errors).decode(errors="replace")
    output = output.replace("\r\n", "\n").replace("\r", "\n")
    return done.exit_code, output[-OUTPUT_TAIL:]


def _pypto_version(python: str) -> str | None:
    """pypto's version as installed for `python` (read from metadata, without importing it)."""
    done = processes.run(
        [python, "-c", "from importlib import metadata; print(metadata.version('pypto'))"],
        limits=processes.Limits(wall_s=60),
        separate_stderr=True,
    )
    return done.output.decode(errors="replace").strip() or None


def parse_perf_dir(
    directory: Path, spec: OpSpec | None = None, request: Request | None = None
) -> tuple[dict[str, Any], int]:
    """The document of an existing artefact folder (no run; outputs from pass-verify only)."""
    try:
        run = artefacts.read_run_folder(artefacts.find_run_folder(directory))
    except (ArtefactError, OSError) as e:
        raise UsageError(str(e)) from e
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": TOOLS[run.run_mode],
        # What the folder says of its device, never this machine's.
        "device": device.recorded(run.run_mode, run.device),
        "tool_version": None,
        "time_metric": TIME_METRIC,
        "artefact_dir": os.fspath(run.folder),
        "outputs": [],
    }
    fill_from_artefacts(doc, run)
    failure = None
    if run.verify_rows is not None:
        names = spec.io_names() if spec is not None else None
        doc["outputs"] = numerics.evidence_from_rows(run.verify_rows, names)
        doc["numerics"] = "from verify_result_brief.csv (6-decimal max diffs)"
        bad = [o for o in doc["outputs"] if not o["all_close"]]
        if bad:
            failure = classify.Failure(
                "accuracy", "; ".join(f"{o['name']}: {o['reason']}" for o in bad)
            )
    if spec is not None and request is not None and request.layout:
        doc["layout_exit"], doc["layout_output"] = run_layout_check(spec, request)
        if failure is None and doc["layout_exit"] != 0:
            failure = classify.Failure("layout", f"layout_check.py exited {doc['layout_exit']}")
    doc["failure"] = (
        None if failure is None else {"category": failure.category, "detail": failure.detail}
    )
    return doc, EXIT_OK if failure is None else EXIT_FAILED
