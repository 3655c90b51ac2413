"""Command line of the PyPTO adapter: measure one config, or parse an existing artefact folder.

    python -m tools.pypto.run --op-dir custom/softmax \
        --config '{"vec_tile_shape":[1,32,1,256]}' --json
    python -m tools.pypto.run --perf-dir DIR [--op-dir custom/softmax] --json

Exit codes: 0 a measured run without failure; 3 a classified failure (the document's
`failure` names it: compile, timeout, oom, accuracy, layout, runtime); 2 bad arguments;
4 the NPU could not be used (nothing measured; the error says what to check); 1 a bug of the
adapter. With --json the last line of stdout is the document (an `{"error", "code"}` object
for exit 2 and 4).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from . import runner
from .spec import SpecError, load_spec


def _config(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise click.BadParameter(f"not JSON: {e}") from e
    if not isinstance(value, dict):
        raise click.BadParameter('must be a JSON object, e.g. {"vec_tile_shape": [1,32,1,256]}')
    return value


def _emit(doc: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(doc, sort_keys=True, allow_nan=False))
        return
    failure = doc.get("failure")
    where = doc.get("device") or {}
    click.echo(f"device: {where.get('run_mode')} {where.get('soc') or '(soc unknown)'}")
    if doc.get("time_us") is not None:
        samples = doc.get("times_us") or []
        click.echo(
            f"time {doc['time_us']:.3f} µs ({doc['time_metric']}, median of {len(samples)}), "
            f"util {doc['util_pct']:.1f}%, bubble {doc['bubble_pct']:.1f}%"
        )
    for out in doc.get("outputs", []):
        click.echo(
            f"output {out['name']}: all_close={out['all_close']} max_diff={out['max_diff']:.3g}"
        )
    if "layout_exit" in doc:
        click.echo(f"layout check exit {doc['layout_exit']}")
    click.echo(f"failure: {failure['category']}: {failure['detail']}" if failure else "measured")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--op-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="The op folder (SPEC.md, <op>_impl.py, <op>_golden.py, layout_check.py).",
)
@click.option(
    "--config",
    "config_text",
    default="{}",
    show_default=True,
    help="The config to measure, a JSON object (missing keys: the impl's defaults).",
)
@click.option(
    "--perf-dir",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    help="Parse this existing artefact folder instead of running anything.",
)
@click.option("--shape", help="Input shape as JSON (default: the first p0_shapes entry).")
@click.option("--dtype", help="Input dtype (default: the first supported_dtypes entry).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the inputs.")
@click.option(
    "--timeout",
    "wall_s",
    type=float,
    default=300.0,
    show_default=True,
    help="Wall-time limit of the run, seconds.",
)
@click.option(
    "--memory-mb",
    type=float,
    default=6144.0,
    show_default=True,
    help="Resident-memory limit of the run (child and its helpers), MB.",
)
@click.option(
    "--no-numerics",
    is_flag=True,
    help="Skip pass-verify: time only, no accuracy evidence (faster).",
)
@click.option(
    "--verify-passes",
    type=click.Choice(["all", "last", "graph"]),
    default="all",
    show_default=True,
    help="Compiler passes pass-verify re-checks: pypto's six, the last, or none "
    "(tensor graph vs golden only; fastest).",
)
@click.option("--no-layout", is_flag=True, help="Do not run the op's layout_check.py.")
@click.option(
    "--keep-artefacts",
    type=click.Path(path_type=Path, file_okay=False),
    help="Move the run folder here (with measurement.json) instead of deleting it.",
)
@click.option(
    "--python",
    "python",
    default=sys.executable,
    show_default=True,
    help="Interpreter with pypto and torch installed, for the child process.",
)
@click.option(
    "--run-mode",
    type=click.Choice(["npu", "sim"]),
    help="Where the kernel runs (default: as PyPTO chooses: npu when ASCEND_HOME_PATH is set, "
    "else sim).",
)
@click.option(
    "--msprof",
    is_flag=True,
    help="Wrap an NPU run in CANN's msprof and read its op summary too.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the measurement JSON document.")
def main(
    op_dir: Path | None,
    config_text: str,
    perf_dir: Path | None,
    shape: str | None,
    dtype: str | None,
    seed: int,
    wall_s: float,
    memory_mb: float,
    no_numerics: bool,
    verify_passes: str,
    no_layout: bool,
    keep_artefacts: Path | None,
    python: str,
    run_mode: str | None,
    msprof: bool,
    as_json: bool,
) -> None:
    """Measure one config of a PyPTO op (on an NPU or in the simulator), or parse an artefact
    folder."""
    config = _config(config_text)
    shape_value = _config_shape(shape)
    try:
        if perf_dir is not None:
            spec = load_spec(op_dir, shape_value, dtype) if op_dir is not None else None
            request = runner.Request(
                op_dir=op_dir or perf_dir, config=config, layout=not no_layout, python=python
            )
            doc, code = runner.parse_perf_dir(perf_dir, spec, request)
        else:
            if op_dir is None:
                raise click.UsageError("give --op-dir (to run) or --perf-dir (to parse)")
            request = runner.Request(
                op_dir=op_dir,
                config=config,
                shape=shape_value,
                dtype=dtype,
                seed=seed,
                numerics=not no_numerics,
                verify_passes=verify_passes,
                layout=not no_layout,
                limits=runner.Limits(wall_s=wall_s, memory_mb=memory_mb),
                keep_dir=keep_artefacts,
                python=python,
                run_mode=run_mode,
                msprof=msprof,
            )
            doc, code = runner.measure(request)
            if doc.get("artefact_dir"):
                Path(doc["artefact_dir"], "measurement.json").write_text(
                    json.dumps(doc, sort_keys=True, allow_nan=False) + "\n"
                )
    except (runner.UsageError, SpecError) as e:
        _refuse(str(e), runner.EXIT_USAGE, as_json)
    except runner.DeviceError as e:
        _refuse(str(e), runner.EXIT_DEVICE, as_json)
    _emit(doc, as_json)
    sys.exit(code)


def _refuse(message: str, code: int, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"error": message, "code": code}))
    else:
        click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _config_shape(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise click.BadParameter(f"--shape is not JSON: {e}") from e
    return value if isinstance(value, list) else None


if __name__ == "__main__":
    main()
