"""A campaign measured by the ledger itself, for the tests of kept kernels, portable records and
audit by re-measurement (issue 27.6-27.8).

The op `sm` lives under the root with its verifier: SPEC.md's template is
`["{python}", "{root}/verifier.py", "{op_dir}", "{config}"]`, so nothing in it names this
machine. The stand-in verifier's time is a pure function of the kernel and the config: the
kernel's `# time_us: T` comment (20 when absent) scaled by 8 / the tile's second dimension, with
three samples ±1 %. It lies while a file `LIE` lies beside it: then it reports 2 µs, whatever
it ran (a verifier that games its evaluator); removed, it measures honestly again.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from cli_harness import OP, Cli

KERNEL = "def kernel(x):\n    # time_us: 20\n    return x\n"

VERIFIER = """
    import hashlib, json, pathlib, re, sys
    op_dir, config = pathlib.Path(sys.argv[1]), json.loads(sys.argv[2])
    assert (op_dir / "SPEC.md").read_text().startswith("---")  # as the adapter reads it
    kernel = (op_dir / "sm_impl.py").read_bytes()
    found = re.search(rb"# time_us: ([0-9.]+)", kernel)
    base = float(found[1]) if found else 20.0
    tile = config.get("vec_tile_shape", [1, 8, 1, 64])
    time_us = base * 8 / tile[1]
    if pathlib.Path(__file__).with_name("LIE").exists():
        time_us = 2.0
    print(json.dumps({
        "config": config, "impl_digest": hashlib.sha256(kernel).hexdigest(),
        "tool": "stand-in", "tool_version": "1", "layout_exit": 0,
        "times_us": [round(time_us * f, 4) for f in (1.0, 1.01, 0.99)],
        "outputs": [{"name": "y", "all_close": True, "max_diff": 0.0}],
    }))
"""

SPEC = """---
p0_shapes: [[32, 32, 1, 256]]
perf_target: {time_us: 5.0, metric: max_work_time_us}
baseline_config: {vec_tile_shape: [1, 8, 1, 64]}
knobs:
  vec_tile_shape: {stage: frontend, kind: tile, default: [1, 8, 1, 64]}
verifier: {command: ["{python}", "{root}/verifier.py", "{op_dir}", "{config}"], timeout_s: 60}
---
# sm
"""


def impl(cli: Cli) -> Path:
    """The op's kernel file."""
    return cli.root / "custom" / OP / f"{OP}_impl.py"


def lie(cli: Cli, lying: bool) -> None:
    """Make the verifier lie (2 µs whatever it runs), or measure honestly again."""
    flag = cli.root / "LIE"
    if lying:
        flag.write_text("", "utf-8")
    else:
        flag.unlink(missing_ok=True)


def measured_op(root: Path) -> Cli:
    """An op activated and targeted from its spec (the ledger ran every check), in stage
    frontend with point vec_tile_shape open."""
    cli = Cli(root)
    op_dir = root / "custom" / OP
    op_dir.mkdir(parents=True)
    (root / "verifier.py").write_text(textwrap.dedent(VERIFIER), "utf-8")
    (op_dir / "SPEC.md").write_text(SPEC, "utf-8")
    (op_dir / "layout_check.py").write_text("import sys\nsys.exit(0)\n", "utf-8")
    impl(cli).write_text(KERNEL, "utf-8")
    cli.ok("init", OP)
    cli.ok("evidence", "compare", OP, "--from-spec")
    cli.ok("evidence", "layout", OP, "--from-spec")
    cli.ok("activate", OP)
    cli.ok("target", OP, "--from-spec")
    cli.ok("skill", "load", OP, "pypto-op-perf-tune")
    cli.ok("stage", "enter", OP, "frontend")
    cli.ok("skill", "load", OP, "tune-frontend")
    cli.ok("point", "open", OP, "vec_tile_shape")
    return cli


def candidate(cli: Cli, width: int) -> dict[str, object]:
    """Start a candidate whose tile's second dimension is `width` and measure it."""
    config = f'{{"vec_tile_shape":[1,{width},1,64]}}'
    attempt = cli.ok("candidate", OP, "--config", config, "--prior", f"width {width}")["attempt"]
    return {**cli.ok("measure", OP), "attempt": attempt}


def to_algorithm(cli: Cli) -> None:
    """From the open frontend point to stage algorithm (the stages between have no knob)."""
    cli.ok("point", "close", OP, "vec_tile_shape", "--reason", "tile widths measured")
    cli.ok("stage", "exit", OP, "frontend")
    cli.ok("skill", "unload", OP, "tune-frontend")
    for stage in ("swimlane", "incore"):  # no knob of the manifest is tuned there
        cli.ok("stage", "enter", OP, stage)
        cli.ok("stage", "exit", OP, stage, "--user-stop", "--reason", "no knob in this stage")
    cli.ok("report", OP)
    cli.ok("stage", "enter", OP, "algorithm")
